// proxy_env's forward mode (`GET http://host/...` to the proxy) carries one request per client
// connection: the head and its declared body go upstream, a keep-alive or pipelined next
// request never does. pypi.test's /linger page logs ("after_reply") what else arrives on the
// connection after its reply; the control sends the same bytes straight to pypi.test, to show
// that a second request on the connection would be logged there.
#include <string>

#include "tests/integration/network_audit.h"
#include "tests/integration/network_fixture.h"
#include "tests/integration/network_proxy_support.h"
#include "tests/integration/sandbox_fixture.h"

namespace sbx::testing {
namespace {

using nettest::CountEvents;

const std::string kPypi(nettest::AddressOf("pypi.test"));

// What pypi.test received after its reply on the runs' connections, concatenated.
std::string AfterReply(const std::vector<nlohmann::json>& events) {
  std::string data;
  for (const auto& event : events) {
    if (Str(event, "kind") == "after_reply") data += Str(event, "data");
  }
  return data;
}

void ExpectOneRequestThenClose(const SandboxedRun& run) {
  EXPECT_EQ(run.probe["statuses"], nlohmann::json::array({200})) << run.diagnostics;
  EXPECT_EQ(run.probe["bodies"], nlohmann::json::array({"pypi.test"})) << run.diagnostics;
  EXPECT_TRUE(run.probe.value("closed", false)) << run.diagnostics;
  EXPECT_EQ(CountEvents(run.events, {.kind = "request", .server = "pypi.test"}), 1u)
      << run.diagnostics;
  EXPECT_EQ(CountEvents(run.events, {.kind = "after_reply", .server = "pypi.test"}), 1u);
  EXPECT_EQ(AfterReply(run.events), "") << "a second request reached pypi.test unchecked";
  EXPECT_EQ(CountEvents(run.events, {.server = "evil.test"}), 0u);
  AuditMatch allowed = ConnAllowed("pypi.test", "proxy", Endpoint(kPypi, nettest::kHttpPort));
  allowed.dst = "pypi.test:80";
  ExpectViaProxy(ReadAuditLog(run.result), allowed);
}

TEST_F(NetworkAllowlist, ProxyEnvForwardCarriesOneRequestPerConnection) {
  const std::vector<std::string> urls = {"http://pypi.test/linger", "http://evil.test/second"};
  auto control = Control({"pipeline", urls[0], urls[1], "--proxy", kPypi + ":80"});
  EXPECT_NE(AfterReply(control.events).find("GET http://evil.test/second"), std::string::npos)
      << "pypi.test logs a second request sent on the connection: " << control.diagnostics;
  SBX_NET_SANDBOXED_HALF();
  const auto policy = ProxyPolicy({"pypi.test:80,443"});
  auto run = Sandboxed(policy, {"pipeline", urls[0], urls[1]});
  ASSERT_TRUE(run.ran);
  ExpectOneRequestThenClose(run);
  // Through the proxy the second request names an allowed host, the first: still not relayed.
  auto same = Sandboxed(policy, {"pipeline", urls[0], "http://pypi.test/second"});
  ASSERT_TRUE(same.ran);
  ExpectOneRequestThenClose(same);
}

TEST_F(NetworkAllowlist, ProxyEnvForwardRelaysTheDeclaredBodyAndNothingAfterIt) {
  // pypi.test reads the 10 bytes of body before it replies: a body cut short gets no reply,
  // one relayed too far shows in "after_reply".
  std::vector<std::string> args = {"pipeline", "http://pypi.test/linger",
                                   "http://evil.test/second", "--data", "0123456789"};
  auto direct = args;
  direct.insert(direct.end(), {"--proxy", kPypi + ":80"});
  auto control = Control(direct);
  EXPECT_EQ(control.probe["statuses"], nlohmann::json::array({200})) << control.diagnostics;
  EXPECT_EQ(AfterReply(control.events).rfind("GET http://evil.test/second", 0), 0u)
      << "what follows the body is the second request: " << control.diagnostics;
  SBX_NET_SANDBOXED_HALF();
  auto run = Sandboxed(ProxyPolicy({"pypi.test:80,443"}), args);
  ASSERT_TRUE(run.ran);
  ExpectOneRequestThenClose(run);
}

}  // namespace
}  // namespace sbx::testing
