// Secret injection (docs/network.md, TLS termination): sbx-netd sets the real header on the
// verified TLS leg to an inject host, while the sandbox holds at most a placeholder; a
// placeholder sent in the clear, an upstream that does not verify and a Host inside TLS that
// is not the host are refused. Each probe runs first unsandboxed in T, where it works.
#include <string>

#include "tests/integration/network_audit.h"
#include "tests/integration/network_fixture.h"
#include "tests/integration/network_inject_support.h"
#include "tests/integration/sandbox_fixture.h"

namespace sbx::testing {
namespace {

using nettest::CountEvents;

const std::string kApi(nettest::AddressOf("api.test"));
const std::string kCdn(nettest::AddressOf("cdn.test"));

TEST_F(NetworkAllowlist, Net25InjectedHeaderReachesTheHostWhileTheSandboxHoldsAPlaceholder) {
  SecretFile secret;
  auto control = Control({"urlopen", "https://api.test/echo", "--auth", "Bearer from-the-client"});
  EXPECT_EQ(Int(control.probe, "status"), 200) << control.diagnostics;
  auto seen = Requests(control.events, "api.test");
  ASSERT_EQ(seen.size(), 1u) << control.diagnostics;
  EXPECT_EQ(Str(seen[0], "authorization"), "Bearer from-the-client") << "the server records it";
  SBX_NET_SANDBOXED_HALF();

  const auto policy = InjectPolicy({"api.test"}, "api.test", secret, net().ca_file());
  auto run = Sandboxed(policy, {"urlopen", "https://api.test/echo", "--auth-env", "API_KEY",
                                "--cafile", kSandboxBundle});
  ASSERT_TRUE(run.ran);
  EXPECT_EQ(Int(run.probe, "status"), 200) << run.diagnostics;
  EXPECT_EQ(Str(run.probe, "auth_sent").rfind("Bearer sbx-ph-", 0), 0u)
      << "the sandbox sends its placeholder: " << run.diagnostics;
  seen = Requests(run.events, "api.test");
  ASSERT_EQ(seen.size(), 1u) << run.diagnostics;
  EXPECT_EQ(Str(seen[0], "authorization"), "Bearer " + secret.value())
      << "the real secret, and only it, reached the host";
  ExpectSecretNowhere(run, secret.value());
  auto log = ReadAuditLog(run.result);
  auto allowed = Matching(log, ConnAllowed("api.test", "fakeip", Endpoint(kApi, 443)));
  ASSERT_FALSE(allowed.empty());
  bool mitm = false;
  for (const auto& record : allowed) mitm = mitm || record.value("mitm", false);
  EXPECT_TRUE(mitm) << "the connection was terminated by sbx-netd";
  bool http = false;
  for (const auto& record : log.records) {
    if (Str(record, "ev") != "http") continue;
    http = true;
    EXPECT_EQ(Str(record, "name"), "api.test");
    EXPECT_EQ(Str(record, "path"), "/echo");
    EXPECT_EQ(Int(record, "status"), 200);
    EXPECT_EQ(record.value("inject", nlohmann::json()), nlohmann::json::array({"api"}));
  }
  EXPECT_TRUE(http) << "an http record per request";

  // The whole environment, as the kernel holds it: the placeholder and the bundle variables.
  auto env = Sandboxed(policy, {"env", "--all"});
  ASSERT_TRUE(env.ran);
  bool placeholder = false, bundle = false;
  for (const auto& entry : env.probe["environ"]) {
    const std::string text = entry.get<std::string>();
    placeholder = placeholder || text.rfind("API_KEY=sbx-ph-", 0) == 0;
    bundle = bundle || text == std::string("SSL_CERT_FILE=") + kSandboxBundle;
  }
  EXPECT_TRUE(placeholder) << env.diagnostics;
  EXPECT_TRUE(bundle) << env.diagnostics;
  ExpectSecretNowhere(env, secret.value());
}

TEST_F(NetworkAllowlist, Net26PlaceholderSentInTheClearIsBlocked) {
  SecretFile secret;
  const std::vector<std::string> probe = {"http", "cdn.test", "--host", "cdn.test", "--auth-env",
                                          "API_KEY"};
  auto control = Control({"http", kCdn, "--host", "cdn.test", "--auth", "Bearer sbx-ph-0"});
  EXPECT_EQ(Int(control.probe, "status"), 200) << control.diagnostics;
  EXPECT_EQ(Requests(control.events, "cdn.test").size(), 1u);
  SBX_NET_SANDBOXED_HALF();
  auto run = Sandboxed(
      InjectPolicy({"api.test", "cdn.test:80,443"}, "api.test", secret, net().ca_file()), probe);
  ASSERT_TRUE(run.ran);
  ExpectBlockedByPolicy(run.probe);
  EXPECT_EQ(CountEvents(run.events, {.server = "cdn.test"}), 0u) << "never reached cdn.test";
  ExpectRecord(ReadAuditLog(run.result), ConnDenied("placeholder_leak"));
  ExpectSecretNowhere(run, secret.value());
}

TEST_F(NetworkAllowlist, Net27UpstreamThatDoesNotVerifyGets502AndNoSecret) {
  SecretFile secret;
  auto control = Control({"urlopen", "https://untrusted.test/echo", "--cafile",
                          net().rogue_ca_file(), "--auth", "Bearer x"});
  EXPECT_EQ(Int(control.probe, "status"), 200) << "served under the rogue CA: " << control.diagnostics;
  SBX_NET_SANDBOXED_HALF();
  // sbx-netd trusts the test CA (and the host's store), not the rogue CA untrusted.test uses.
  auto run = Sandboxed(InjectPolicy({"untrusted.test"}, "untrusted.test", secret, net().ca_file()),
                       {"urlopen", "https://untrusted.test/echo", "--auth-env", "API_KEY",
                        "--cafile", kSandboxBundle});
  ASSERT_TRUE(run.ran);
  EXPECT_EQ(Int(run.probe, "status"), 502) << run.diagnostics;
  EXPECT_EQ(Requests(run.events, "untrusted.test").size(), 0u) << "no request was sent";
  ExpectRecord(ReadAuditLog(run.result), ConnDenied("tls_verify_failed"));
  ExpectSecretNowhere(run, secret.value());
}

TEST_F(NetworkAllowlist, Net28HostInsideTlsMustBeTheInjectHost) {
  SecretFile secret;
  const std::vector<std::string> base = {"tls", kApi, "--sni", "api.test", "--host", "evil.test"};
  auto control = Control(base);
  EXPECT_EQ(Int(control.probe, "status"), 200) << "api.test serves any Host: " << control.diagnostics;
  SBX_NET_SANDBOXED_HALF();
  std::vector<std::string> probe = {"tls", "api.test", "--sni", "api.test", "--host", "evil.test",
                                    "--cafile", kSandboxBundle};
  auto run = Sandboxed(InjectPolicy({"api.test"}, "api.test", secret, net().ca_file()), probe);
  ASSERT_TRUE(run.ran);
  ExpectBlockedByPolicy(run.probe);
  EXPECT_EQ(Requests(run.events, "api.test").size(), 0u);
  // The connection was allowed (its name is the inject host); the request inside it was not.
  ExpectRecord(ReadAuditLog(run.result),
               AuditMatch{.ev = "http", .decision = "deny", .reason = "host_mismatch", .name = "api.test"});
}

}  // namespace
}  // namespace sbx::testing
