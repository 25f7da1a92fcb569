// The opt-in proxy_env (policies/SCHEMA.md): HTTP_PROXY/HTTPS_PROXY point at sbx-netd's proxy
// on the sandbox's loopback, and a CONNECT through it is decided as a captured connection
// would be: by name rules for a name, by address rules for an IP literal, internal addresses
// refused. Each probe runs first unsandboxed in T, where it reaches what the sandbox must not.
#include <string>

#include "tests/integration/network_audit.h"
#include "tests/integration/network_fixture.h"
#include "tests/integration/network_inject_support.h"
#include "tests/integration/network_proxy_support.h"
#include "tests/integration/sandbox_fixture.h"

namespace sbx::testing {
namespace {

using nettest::CountEvents;

const std::string kPypi(nettest::AddressOf("pypi.test"));
const std::string kEvil(nettest::AddressOf("evil.test"));
const std::string kApi(nettest::AddressOf("api.test"));

// urlopen of pypi.test on `port` got pypi.test's page, by one request, through the proxy.
void ExpectPypiThroughTheProxy(const SandboxedRun& run, int port) {
  EXPECT_EQ(Int(run.probe, "status"), 200) << run.diagnostics;
  EXPECT_EQ(Str(run.probe, "body"), "pypi.test") << run.diagnostics;
  EXPECT_EQ(CountEvents(run.events, {.kind = "request", .server = "pypi.test", .port = port}), 1u);
  AuditMatch allowed = ConnAllowed("pypi.test", "proxy", Endpoint(kPypi, port));
  allowed.dst = "pypi.test:" + std::to_string(port);
  ExpectViaProxy(ReadAuditLog(run.result), allowed);
}

TEST_F(NetworkAllowlist, ProxyEnvVariablesOnlyWhenThePolicyAsks) {
  auto control = Control({"env"});
  EXPECT_EQ(control.probe["proxy_env"], nlohmann::json::object())
      << "the harness passes none of its own: " << control.diagnostics;
  SBX_NET_SANDBOXED_HALF();
  auto off = Sandboxed(Allowlist({"pypi.test"}), {"env"});
  ASSERT_TRUE(off.ran);
  EXPECT_EQ(off.probe["proxy_env"], nlohmann::json::object()) << off.diagnostics;
  auto on = Sandboxed(ProxyPolicy({"pypi.test"}), {"env"});
  ASSERT_TRUE(on.ran);
  const std::string url = "http://127.0.0.1:3128";
  const std::string local = "localhost,127.0.0.1,::1";
  EXPECT_EQ(on.probe["proxy_env"],
            nlohmann::json({{"HTTP_PROXY", url}, {"HTTPS_PROXY", url}, {"http_proxy", url},
                            {"https_proxy", url}, {"NO_PROXY", local}, {"no_proxy", local}}))
      << "never ALL_PROXY or a socks URL: " << on.diagnostics;
}

TEST_F(NetworkAllowlist, ProxyEnvUrllibReachesAnAllowedHttpsHostThroughConnect) {
  const std::vector<std::string> probe = {"urlopen", "https://pypi.test/"};
  auto control = Control(probe);
  EXPECT_EQ(Int(control.probe, "status"), 200) << control.diagnostics;
  SBX_NET_SANDBOXED_HALF();
  auto run = Sandboxed(ProxyPolicy({"pypi.test"}), probe);
  ASSERT_TRUE(run.ran);
  ExpectPypiThroughTheProxy(run, nettest::kHttpsPort);
}

TEST_F(NetworkAllowlist, ProxyEnvDeniedNameGets403NamingTheReason) {
  auto control = Control({"urlopen", "https://evil.test/"});
  EXPECT_EQ(Str(control.probe, "body"), "evil.test") << control.diagnostics;
  SBX_NET_SANDBOXED_HALF();
  const auto policy = ProxyPolicy({"pypi.test"});
  auto run = Sandboxed(policy, {"connect", "evil.test:443"});
  ASSERT_TRUE(run.ran);
  ExpectProxyRefusal(run.probe, 403, "no_rule");
  EXPECT_EQ(CountEvents(run.events, {.server = "evil.test"}), 0u);
  ExpectViaProxy(ReadAuditLog(run.result), ConnDenied("no_rule", "evil.test:443"));
  // A tool that honours the variables sees the proxy's refusal, not a connection error.
  auto urllib = Sandboxed(policy, {"urlopen", "https://evil.test/"});
  ASSERT_TRUE(urllib.ran);
  EXPECT_NE(Str(urllib.probe, "msg").find("403"), std::string::npos) << urllib.diagnostics;
  EXPECT_EQ(CountEvents(urllib.events, {.server = "evil.test"}), 0u);
}

TEST_F(NetworkAllowlist, ProxyEnvIpLiteralMatchesOnlyAddressRules) {
  auto control = Control({"tls", kEvil});
  EXPECT_EQ(Str(control.probe, "peer_cn"), "evil.test") << control.diagnostics;
  SBX_NET_SANDBOXED_HALF();
  const std::string target = Endpoint(kEvil, 443);
  auto by_name = Sandboxed(ProxyPolicy({"evil.test"}), {"connect", target, "--tls"});
  ASSERT_TRUE(by_name.ran);
  ExpectProxyRefusal(by_name.probe, 403, "no_rule");
  EXPECT_EQ(CountEvents(by_name.events, {.server = "evil.test"}), 0u);
  ExpectViaProxy(ReadAuditLog(by_name.result), ConnDenied("no_rule", target));

  auto by_address = Sandboxed(ProxyPolicy({target}), {"connect", target, "--tls"});
  ASSERT_TRUE(by_address.ran);
  EXPECT_EQ(Int(by_address.probe, "status"), 200) << by_address.diagnostics;
  EXPECT_EQ(Str(by_address.probe, "peer_cn"), "evil.test") << by_address.diagnostics;
  EXPECT_EQ(Int(by_address.probe, "tunnel_status"), 200) << by_address.diagnostics;
  ExpectViaProxy(ReadAuditLog(by_address.result),
                 {.ev = "conn", .decision = "allow", .dst = target, .upstream = target});
}

TEST_F(NetworkAllowlist, ProxyEnvNameResolvingToAnInternalAddressIsDenied) {
  auto control = Control({"urlopen", "https://internal.test/"});
  EXPECT_EQ(Str(control.probe, "body"), "internal.test") << control.diagnostics;
  SBX_NET_SANDBOXED_HALF();
  auto run = Sandboxed(ProxyPolicy({"internal.test"}), {"connect", "internal.test:443", "--tls"});
  ASSERT_TRUE(run.ran);
  ExpectProxyRefusal(run.probe, 403, "internal_address");
  EXPECT_EQ(CountEvents(run.events, {.server = "internal.test"}), 0u);
  AuditMatch denied = ConnDenied("internal_address", "internal.test:443");
  denied.name = "internal.test";
  ExpectViaProxy(ReadAuditLog(run.result), denied);
}

TEST_F(NetworkAllowlist, ProxyEnvTunnelMustCarryTheConnectedName) {
  // pypi.test's server answers any SNI; through the proxy the ClientHello must name the
  // CONNECT target, as on a captured connection.
  auto control = Control({"tls", kPypi, "--sni", "evil.test"});
  EXPECT_FALSE(Str(control.probe, "peer_cn").empty()) << control.diagnostics;
  SBX_NET_SANDBOXED_HALF();
  auto run = Sandboxed(ProxyPolicy({"pypi.test"}),
                       {"connect", "pypi.test:443", "--tls", "--sni", "evil.test"});
  ASSERT_TRUE(run.ran);
  EXPECT_EQ(Int(run.probe, "status"), 200) << "the CONNECT itself is allowed: " << run.diagnostics;
  EXPECT_EQ(Str(run.probe, "errno_name"), "ECONNRESET") << run.diagnostics;
  EXPECT_EQ(CountEvents(run.events, {.kind = "request", .server = "pypi.test"}), 0u);
  ExpectViaProxy(ReadAuditLog(run.result), ConnDenied("sni_mismatch", "pypi.test:443"));
}

TEST_F(NetworkAllowlist, ProxyEnvConnectToAnInjectHostIsTerminatedAndInjected) {
  SecretFile secret;
  auto control = Control({"urlopen", "https://api.test/echo", "--auth", "Bearer from-the-client"});
  EXPECT_EQ(Int(control.probe, "status"), 200) << control.diagnostics;
  ASSERT_EQ(Requests(control.events, "api.test").size(), 1u) << control.diagnostics;
  SBX_NET_SANDBOXED_HALF();
  auto policy = InjectPolicy({"api.test"}, "api.test", secret, net().ca_file());
  policy["proxy_env"] = true;
  auto run = Sandboxed(policy, {"urlopen", "https://api.test/echo", "--auth-env", "API_KEY",
                                "--cafile", kSandboxBundle});
  ASSERT_TRUE(run.ran);
  EXPECT_EQ(Int(run.probe, "status"), 200) << run.diagnostics;
  auto seen = Requests(run.events, "api.test");
  ASSERT_EQ(seen.size(), 1u) << run.diagnostics;
  EXPECT_EQ(Str(seen[0], "authorization"), "Bearer " + secret.value())
      << "the tunnel went through the same injection as a captured connection";
  ExpectSecretNowhere(run, secret.value());
  auto log = ReadAuditLog(run.result);
  AuditMatch allowed = ConnAllowed("api.test", "proxy", Endpoint(kApi, 443));
  allowed.dst = "api.test:443";
  ExpectViaProxy(log, allowed);
  for (const auto& record : Matching(log, allowed)) EXPECT_TRUE(record.value("mitm", false));
  ExpectRecord(log, AuditMatch{.ev = "http", .decision = "allow", .name = "api.test"});
}

TEST_F(NetworkAllowlist, ProxyEnvForwardsPlainHttpAsCapturedPort80Traffic) {
  for (const char* url : {"http://pypi.test/", "http://evil.test/"}) {
    auto control = Control({"urlopen", url});
    EXPECT_EQ(Int(control.probe, "status"), 200) << control.diagnostics;
  }
  SBX_NET_SANDBOXED_HALF();
  const auto policy = ProxyPolicy({"pypi.test:80,443"});
  auto run = Sandboxed(policy, {"urlopen", "http://pypi.test/"});
  ASSERT_TRUE(run.ran);
  ExpectPypiThroughTheProxy(run, nettest::kHttpPort);

  auto denied = Sandboxed(policy, {"urlopen", "http://evil.test/"});
  ASSERT_TRUE(denied.ran);
  ExpectProxyRefusal(denied.probe, 403, "no_rule");
  EXPECT_EQ(CountEvents(denied.events, {.server = "evil.test"}), 0u);
  ExpectViaProxy(ReadAuditLog(denied.result), ConnDenied("no_rule", "evil.test:80"));
}

TEST_F(NetworkAllowlist, ProxyEnvPlaceholderInForwardedPlainHttpIsBlocked) {
  SecretFile secret;
  auto control = Control({"urlopen", "http://cdn.test/", "--auth", "Bearer sbx-ph-0"});
  EXPECT_EQ(Int(control.probe, "status"), 200) << control.diagnostics;
  SBX_NET_SANDBOXED_HALF();
  auto policy = InjectPolicy({"api.test", "cdn.test:80,443"}, "api.test", secret, net().ca_file());
  policy["proxy_env"] = true;
  auto run = Sandboxed(policy, {"urlopen", "http://cdn.test/", "--auth-env", "API_KEY"});
  ASSERT_TRUE(run.ran);
  ExpectProxyRefusal(run.probe, 403, "placeholder_leak");
  EXPECT_EQ(CountEvents(run.events, {.server = "cdn.test"}), 0u) << "never reached cdn.test";
  ExpectViaProxy(ReadAuditLog(run.result), ConnDenied("placeholder_leak", "cdn.test:80"));
  ExpectSecretNowhere(run, secret.value());
}

TEST_F(NetworkAllowlist, ProxyEnvRefusesWhatItDoesNotServe) {
  SBX_NET_SANDBOXED_HALF();
  // The control: the same probe under the same policy, its target well-formed, reaches
  // pypi.test (the probe needs the proxy, so there is no unsandboxed run of it).
  const auto policy = ProxyPolicy({"pypi.test"});
  auto control = Sandboxed(policy, {"connect", "pypi.test:443"});
  ASSERT_TRUE(control.ran);
  EXPECT_EQ(Int(control.probe, "status"), 200) << control.diagnostics;
  EXPECT_EQ(CountEvents(control.events, {.kind = "conn", .server = "pypi.test"}), 1u)
      << control.diagnostics;
  // A CONNECT whose target is not host:port: 400, and no connection anywhere.
  auto run = Sandboxed(policy, {"connect", "pypi.test"});
  ASSERT_TRUE(run.ran);
  EXPECT_EQ(Int(run.probe, "status"), 400) << run.diagnostics;
  EXPECT_EQ(CountEvents(run.events, {.server = "pypi.test"}), 0u);
  ExpectViaProxy(ReadAuditLog(run.result), ConnDenied("proxy_request"));
}

// Port 53 is the stub's: no rule relays it to a resolver, and neither does the proxy.
TEST_F(NetworkAllowlist, ProxyEnvConnectToPort53IsRefusedEvenWhenARuleNamesIt) {
  const std::string dns(nettest::kDnsAddress);
  auto control = Control({"dns", "--tcp", "--server", dns, "pypi.test/A"});
  ASSERT_EQ(control.probe["answers"].size(), 1u) << control.diagnostics;
  EXPECT_EQ(Int(control.probe["answers"][0], "ancount"), 1) << control.diagnostics;
  SBX_NET_SANDBOXED_HALF();
  const auto policy = ProxyPolicy({"pypi.test", dns + ":53,853"});
  // The same rule's other port is tunnelled: the refusal is port 53's alone.
  auto tunnel = Sandboxed(policy, {"connect", Endpoint(dns, nettest::kDotPort)});
  ASSERT_TRUE(tunnel.ran);
  EXPECT_EQ(Int(tunnel.probe, "status"), 200) << tunnel.diagnostics;
  auto run = Sandboxed(policy, {"connect", Endpoint(dns, 53)});
  ASSERT_TRUE(run.ran);
  ExpectProxyRefusal(run.probe, 403, "port");
  EXPECT_EQ(CountEvents(run.events, {.server = std::string(nettest::kDnsName)}), 0u);
  ExpectViaProxy(ReadAuditLog(run.result), ConnDenied("port", Endpoint(dns, 53)));
}

}  // namespace
}  // namespace sbx::testing
