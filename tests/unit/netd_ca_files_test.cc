// Unit tests for sbx-netd's X.509 check of the policy's CA files (src/netd/ca_files.h).
#include "src/netd/ca_files.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "src/netd/tls_ca.h"

namespace sbx::netd {
namespace {

std::string Certificate(const std::string& name) {
  auto ca = MintRunCa({name}, name);
  EXPECT_TRUE(ca) << ca.error().ToString();
  return ca ? ca->cert_pem : "";
}

TEST(CheckCaFiles, AcceptsFilesOfCertificates) {
  const std::string bundle = "# two CAs\n" + Certificate("a.test") + Certificate("b.test");
  EXPECT_TRUE(CheckCaFiles("network.extra_ca_files", {Certificate("c.test"), bundle},
                           {"/etc/c.pem", "/etc/bundle.pem"}));
  EXPECT_TRUE(CheckCaFiles("network.extra_ca_files", {}, {}));
}

TEST(CheckCaFiles, NamesTheFieldThePathAndTheBlock) {
  std::string damaged = Certificate("b.test");
  damaged.replace(damaged.find('\n') + 10, 8, "AAAAAAAA");  // base64 still, DER no longer
  auto checked = CheckCaFiles("network.upstream_ca_files",
                              {Certificate("a.test"), Certificate("a.test") + damaged},
                              {"/etc/a.pem", "/etc/ab.pem"});
  ASSERT_FALSE(checked);
  EXPECT_NE(checked.error().message.find(
                "network.upstream_ca_files[1]: /etc/ab.pem: certificate 2 of 2 is not valid X.509"),
            std::string::npos)
      << checked.error().message;

  checked = CheckCaFiles("network.extra_ca_files", {"hello\n"}, {"/etc/x.pem"});
  ASSERT_FALSE(checked);
  EXPECT_NE(checked.error().message.find(
                "network.extra_ca_files[0]: /etc/x.pem: no PEM certificate in it"),
            std::string::npos)
      << checked.error().message;
}

}  // namespace
}  // namespace sbx::netd
