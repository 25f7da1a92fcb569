// All-port capture (sandbox/net/network_redirect.h): the sandbox redirects every non-loopback TCP
// connection to one listener with nf_tables NAT, so every TCP attempt, on any port, is decided
// and logged, a `*` rule reaches its host on any port, and the code's own loopback servers
// keep their ports. Each probe runs first unsandboxed in T.
#include <string>

#include "tests/integration/network_audit.h"
#include "tests/integration/network_fixture.h"
#include "tests/integration/sandbox_fixture.h"

namespace sbx::testing {
namespace {

using nettest::CountEvents;

const std::string kPypi(nettest::AddressOf("pypi.test"));
const std::string kEvil(nettest::AddressOf("evil.test"));
// No server listens here and no per-port capture would take it: only the redirect logs it.
constexpr int kUncapturedPort = 47000;

TEST_F(NetworkAllowlist, StarPortReachesTheAllowedNameOnAnyPort) {
  for (int port : {nettest::kPostgresPort, nettest::kSshPort}) {
    auto control = Control({"banner", "pypi.test", std::to_string(port)});
    EXPECT_NE(Str(control.probe, "banner").find("pypi.test"), std::string::npos)
        << control.diagnostics;
  }
  SBX_NET_SANDBOXED_HALF();
  for (int port : {nettest::kPostgresPort, nettest::kSshPort}) {
    SCOPED_TRACE(port);
    auto run = Sandboxed(Allowlist({"pypi.test:*"}), {"banner", "pypi.test", std::to_string(port)});
    ASSERT_TRUE(run.ran);
    EXPECT_NE(Str(run.probe, "banner").find("pypi.test"), std::string::npos) << run.diagnostics;
    EXPECT_EQ(CountEvents(run.events, {.server = "pypi.test", .port = port}), 1u);
    ExpectRecord(ReadAuditLog(run.result), ConnAllowed("pypi.test", "fakeip", Endpoint(kPypi, port)));
  }
}

TEST_F(NetworkAllowlist, StarPortLogsAndRefusesEveryOtherDestinationOnAnyPort) {
  auto control = Control({"banner", kEvil, std::to_string(nettest::kPostgresPort)});
  EXPECT_NE(Str(control.probe, "banner").find("evil.test"), std::string::npos)
      << control.diagnostics;
  SBX_NET_SANDBOXED_HALF();
  const auto policy = Allowlist({"pypi.test:*"});
  for (int port : {nettest::kPostgresPort, kUncapturedPort}) {
    SCOPED_TRACE(port);
    auto run = Sandboxed(policy, {"banner", kEvil, std::to_string(port)});
    ASSERT_TRUE(run.ran);
    ExpectReset(run.probe);
    EXPECT_EQ(CountEvents(run.events, {.server = "evil.test"}), 0u);
    ExpectRecord(ReadAuditLog(run.result), ConnDenied("no_rule", Endpoint(kEvil, port)));
    EXPECT_EQ(run.result["network"]["coverage"]["tcp"], "all") << run.result.dump();
  }
  // An allowed name resolved by hand is still an IP literal: only address rules match those.
  auto literal = Sandboxed(policy, {"banner", kPypi, std::to_string(nettest::kPostgresPort)});
  ASSERT_TRUE(literal.ran);
  ExpectReset(literal.probe);
  ExpectRecord(ReadAuditLog(literal.result),
               ConnDenied("no_rule", Endpoint(kPypi, nettest::kPostgresPort)));
}

// Port 0 names no service: a connection to it is refused and logged as "port" even under a
// `*` rule, by name and by address, never dialled.
TEST_F(NetworkAllowlist, PortZeroIsRefusedUnderAStarRule) {
  auto control = Control({"banner", kPypi, "0"});
  EXPECT_EQ(Str(control.probe, "stage"), "connect") << control.diagnostics;
  EXPECT_FALSE(Str(control.probe, "errno_name").empty()) << control.diagnostics;
  SBX_NET_SANDBOXED_HALF();
  auto policy = Allowlist({"pypi.test:*", kPypi + ":*"});
  for (const std::string& target : {std::string("pypi.test"), kPypi}) {
    SCOPED_TRACE(target);
    auto run = Sandboxed(policy, {"banner", target, "0"});
    ASSERT_TRUE(run.ran);
    ExpectReset(run.probe);
    auto log = ReadAuditLog(run.result);
    const auto refused = Matching(log, {.ev = "conn", .decision = "deny", .reason = "port"});
    ASSERT_FALSE(refused.empty()) << "no conn record with reason port";
    for (const auto& record : refused) EXPECT_TRUE(Str(record, "dst").ends_with(":0")) << record;
    ExpectNoRecord(log, {.ev = "conn", .decision = "allow"});
    ExpectNoRecord(log, {.ev = "conn", .reason = "upstream_error"});
  }
}

TEST_F(NetworkAllowlist, EveryPortIsCapturedWithoutAStarRuleToo) {
  SBX_NET_SANDBOXED_HALF();
  auto run = Sandboxed(Allowlist({"pypi.test"}), {"banner", kEvil, std::to_string(kUncapturedPort)});
  ASSERT_TRUE(run.ran);
  ExpectReset(run.probe);
  ExpectRecord(ReadAuditLog(run.result), ConnDenied("no_rule", Endpoint(kEvil, kUncapturedPort)));
  EXPECT_EQ(run.result["network"]["coverage"]["tcp"], "all") << run.result.dump();
}

// The capture listener itself (port 1 on every address of the sandbox) takes connections that
// the redirect did not translate: netd then sees their real, loopback destination and refuses.
TEST_F(NetworkAllowlist, ConnectionsStraightToTheCaptureListenerAreRefusedAndLogged) {
  SBX_NET_SANDBOXED_HALF();
  for (const char* address : {"127.0.0.1", "127.0.0.2"}) {
    SCOPED_TRACE(address);
    auto run = Sandboxed(Allowlist({"pypi.test:*"}), {"banner", address, "1"});
    ASSERT_TRUE(run.ran);
    ExpectReset(run.probe);
    ExpectRecord(ReadAuditLog(run.result), ConnDenied("", Endpoint(address, 1)));
  }
}

// Per-port capture held 8000 and 8080 (audit-only ports) on every address of the sandbox, so a
// dev server the code started there failed with EADDRINUSE; the redirect leaves loopback alone.
TEST_F(NetworkAllowlist, TheCodesOwnLoopbackServersKeepTheirPorts) {
  const std::vector<std::string> probe = {"own_server", "8000", "8080", "5432"};
  auto control = Control(probe);
  for (const char* port : {"8000", "8080", "5432"}) {
    EXPECT_EQ(control.probe["ports"][port], "own") << control.diagnostics;
  }
  SBX_NET_SANDBOXED_HALF();
  auto run = Sandboxed(Allowlist({"pypi.test:443,5432"}), probe);
  ASSERT_TRUE(run.ran);
  for (const char* port : {"8000", "8080", "5432"}) {
    EXPECT_EQ(run.probe["ports"][port], "own") << port << ": " << run.diagnostics;
  }
}

}  // namespace
}  // namespace sbx::testing
