// The proxy_env tests' shared policy and checks; see network_proxy_support.h.
#include "tests/integration/network_proxy_support.h"

#include <gtest/gtest.h>

#include "tests/integration/network_fixture.h"

namespace sbx::testing {

nlohmann::json ProxyPolicy(const std::vector<std::string>& allow) {
  nlohmann::json policy = Allowlist(allow);
  policy["proxy_env"] = true;
  return policy;
}

void ExpectViaProxy(const AuditLog& log, const AuditMatch& match) {
  auto found = Matching(log, match);
  ASSERT_FALSE(found.empty()) << "no record like the one expected in " << log.path;
  for (const auto& record : found) EXPECT_EQ(Str(record, "via"), "proxy") << record.dump();
}

void ExpectProxyRefusal(const nlohmann::json& probe, int status, const std::string& reason) {
  EXPECT_EQ(Int(probe, "status"), status) << probe.dump();
  EXPECT_NE(Str(probe, "body").find(reason), std::string::npos) << probe.dump();
}

}  // namespace sbx::testing
