// A CONNECT through the proxy_env proxy to an address the sandbox must never reach through
// netd: T's loopback (netd's own network namespace), the link-local metadata address, and a
// fake address the stub DNS never handed out. Each is refused with its reason, logged via the
// proxy, and the same probe reaches its target unsandboxed or when a rule allows it.
#include <string>

#include "tests/integration/network_audit.h"
#include "tests/integration/network_fixture.h"
#include "tests/integration/network_proxy_support.h"
#include "tests/integration/sandbox_fixture.h"

namespace sbx::testing {
namespace {

using nettest::CountEvents;

TEST_F(NetworkAllowlist, ProxyEnvConnectToLoopbackIsRefused) {
  // netd serves the proxy from T, where the canary listens on loopback.
  const std::string canary_port = std::to_string(nettest::kCanaryPort);
  auto control = Control({"banner", "127.0.0.1", canary_port});
  EXPECT_EQ(Str(control.probe, "banner"), "canary-banner canary") << control.diagnostics;
  SBX_NET_SANDBOXED_HALF();
  const std::string target = "127.0.0.1:" + canary_port;
  auto run = Sandboxed(ProxyPolicy({"pypi.test", target}), {"connect", target});
  ASSERT_TRUE(run.ran);
  ExpectProxyRefusal(run.probe, 403, "internal_address");
  EXPECT_EQ(CountEvents(run.events, {.server = nettest::kCanaryName}), 0u);
  ExpectViaProxy(ReadAuditLog(run.result), ConnDenied("internal_address", target));
}

TEST_F(NetworkAllowlist, ProxyEnvConnectToTheMetadataAddressIsRefused) {
  const std::string meta(nettest::AddressOf("meta.test"));
  const std::string target = Endpoint(meta, nettest::kHttpPort);
  auto control = Control({"http", meta, "--host", "meta.test"});
  EXPECT_EQ(Str(control.probe, "body"), "meta.test") << control.diagnostics;
  SBX_NET_SANDBOXED_HALF();
  // An address rule covers it, so only the internal-address check can refuse.
  auto run = Sandboxed(ProxyPolicy({"pypi.test", target}), {"connect", target});
  ASSERT_TRUE(run.ran);
  ExpectProxyRefusal(run.probe, 403, "internal_address");
  EXPECT_EQ(CountEvents(run.events, {.server = "meta.test"}), 0u);
  ExpectViaProxy(ReadAuditLog(run.result), ConnDenied("internal_address", target));
  // allow_private is the one way to it, and opens it through the proxy too.
  auto policy = ProxyPolicy({"pypi.test"});
  policy["allow_private"] = nlohmann::json::array({target});
  auto allowed = Sandboxed(policy, {"connect", target});
  ASSERT_TRUE(allowed.ran);
  EXPECT_EQ(Int(allowed.probe, "status"), 200) << allowed.diagnostics;
}

TEST_F(NetworkAllowlist, ProxyEnvConnectToAnUnmappedFakeAddressIsRefused) {
  SBX_NET_SANDBOXED_HALF();
  const auto policy = ProxyPolicy({"pypi.test"});
  // The control: the fake address the stub DNS handed out for pypi.test stands for it.
  auto mapped = Sandboxed(policy, {"connect", "pypi.test:443", "--resolve"});
  ASSERT_TRUE(mapped.ran);
  EXPECT_EQ(Str(mapped.probe, "target").rfind("198.1", 0), 0u) << mapped.diagnostics;
  EXPECT_EQ(Int(mapped.probe, "status"), 200) << mapped.diagnostics;
  // 198.19.255.254: in the fake range, never handed out in a run this short.
  const std::string target = "198.19.255.254:443";
  auto run = Sandboxed(policy, {"connect", target});
  ASSERT_TRUE(run.ran);
  ExpectProxyRefusal(run.probe, 403, "unmapped_fake_ip");
  ExpectViaProxy(ReadAuditLog(run.result), ConnDenied("unmapped_fake_ip", target));
}

}  // namespace
}  // namespace sbx::testing
