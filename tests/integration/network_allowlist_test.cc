// Network allowlist, names and connections (docs/testing.md, the small internet): what an allowed
// name reaches, and how IP literals, SNI/Host mismatches, ports and unknown names are refused. Each
// probe runs first unsandboxed in T, where it reaches what the sandbox must not.
#include <string>

#include "tests/integration/network_audit.h"
#include "tests/integration/network_fixture.h"
#include "tests/integration/sandbox_fixture.h"

namespace sbx::testing {
namespace {

using nettest::CountEvents;

const std::string kPypi(nettest::AddressOf("pypi.test"));
const std::string kEvil(nettest::AddressOf("evil.test"));

TEST_F(NetworkAllowlist, Net11HttpsAndHttpToAnAllowedNameWithoutProxyEnv) {
  for (const char* url : {"https://pypi.test/", "http://pypi.test/"}) {
    auto control = Control({"urlopen", url});
    EXPECT_EQ(Int(control.probe, "status"), 200) << control.diagnostics;
    EXPECT_EQ(Str(control.probe, "body"), "pypi.test") << control.diagnostics;
  }
  SBX_NET_SANDBOXED_HALF();
  const auto policy = Allowlist({"pypi.test:80,443"});
  auto env = Sandboxed(policy, {"env"});
  ASSERT_TRUE(env.ran);
  EXPECT_EQ(env.probe["proxy_env"], nlohmann::json::object()) << env.diagnostics;

  for (int port : {nettest::kHttpsPort, nettest::kHttpPort}) {
    SCOPED_TRACE(port);
    auto run = Sandboxed(
        policy, {"urlopen", (port == 443 ? "https" : "http") + std::string("://pypi.test/")});
    ASSERT_TRUE(run.ran);
    EXPECT_EQ(Int(run.probe, "status"), 200) << run.diagnostics;
    EXPECT_EQ(Str(run.probe, "body"), "pypi.test") << run.diagnostics;
    EXPECT_EQ(CountEvents(run.events, {.kind = "request", .server = "pypi.test", .port = port}),
              1u);
    auto log = ReadAuditLog(run.result);
    ExpectRecord(log, DnsAllowed("pypi.test", "allow[0]"));
    ExpectRecord(log, ConnAllowed("pypi.test", "fakeip", Endpoint(kPypi, port)));
    ExpectNetworkSummary(run.result, 1, 0);
  }
}

TEST_F(NetworkAllowlist, DownloadFromAnAllowedNameArrivesIntact) {
  constexpr size_t kSize = 5 * 1024 * 1024;
  auto expected = net().BlobSha256(kSize);
  ASSERT_TRUE(expected) << expected.error().ToString();
  const std::string url = "https://pypi.test/blob/" + std::to_string(kSize);
  auto control = Control({"urlopen", url, "--digest"});
  EXPECT_EQ(Int(control.probe, "length"), static_cast<long>(kSize)) << control.diagnostics;
  EXPECT_EQ(Str(control.probe, "sha256"), *expected) << control.diagnostics;
  SBX_NET_SANDBOXED_HALF();
  auto run = Sandboxed(Allowlist({"pypi.test"}), {"urlopen", url, "--digest"});
  ASSERT_TRUE(run.ran);
  EXPECT_EQ(Int(run.probe, "status"), 200) << run.diagnostics;
  EXPECT_EQ(Int(run.probe, "length"), static_cast<long>(kSize)) << run.diagnostics;
  EXPECT_EQ(Str(run.probe, "sha256"), *expected) << run.diagnostics;
  auto log = ReadAuditLog(run.result);
  long most_down = 0;
  for (const auto& record : Matching(log, ConnAllowed("pypi.test", "fakeip", Endpoint(kPypi, 443))))
    most_down = std::max(most_down, Int(record, "bytes_down"));
  EXPECT_GE(most_down, static_cast<long>(kSize)) << "bytes_down of the download";
}

TEST_F(NetworkAllowlist, DeniedPlainHttpRequestGets403SayingPolicy) {
  const std::vector<std::string> probe = {"http", kEvil, "--host", "evil.test"};
  auto control = Control(probe);
  EXPECT_EQ(Str(control.probe, "body"), "evil.test") << control.diagnostics;
  EXPECT_EQ(CountEvents(control.events, {.kind = "request", .server = "evil.test"}), 1u);
  SBX_NET_SANDBOXED_HALF();
  auto run = Sandboxed(Allowlist({"pypi.test:80,443"}), probe);
  ASSERT_TRUE(run.ran);
  ExpectBlockedByPolicy(run.probe);
  EXPECT_EQ(CountEvents(run.events, {.server = "evil.test"}), 0u);
  ExpectRecord(ReadAuditLog(run.result), ConnDenied("no_rule", Endpoint(kEvil, 80)));
}

TEST_F(NetworkAllowlist, Net13UnlistedNameIsNxdomainAndNeverAskedUpstream) {
  auto control = Control({"resolve", "evil.test"});
  EXPECT_EQ(control.probe["addrs"], nlohmann::json::array({kEvil})) << control.diagnostics;
  // A name outside T's /etc/hosts does reach the internet's resolver from T.
  control = Control({"resolve", "x1.evil.test"});
  EXPECT_EQ(control.probe["addrs"], nlohmann::json::array({kEvil})) << control.diagnostics;
  EXPECT_GE(CountEvents(control.events, {.kind = "dns", .qname = "x1.evil.test"}), 1u);
  SBX_NET_SANDBOXED_HALF();
  auto run = Sandboxed(Allowlist({"pypi.test"}), {"resolve", "evil.test"});
  ASSERT_TRUE(run.ran);
  EXPECT_EQ(Str(run.probe, "errno_name"), "EAI_NONAME") << run.diagnostics;
  EXPECT_LT(Number(run.probe, "ms"), 100 * WallClockScale()) << run.diagnostics;
  EXPECT_EQ(CountEvents(run.events, {.kind = "dns"}), 0u) << "the stub must not forward";
  auto log = ReadAuditLog(run.result);
  ExpectRecord(log, DnsDenied("evil.test"));
  ExpectNetworkSummary(run.result, 0, 1, "evil.test");
}

TEST_F(NetworkAllowlist, Net14IpLiteralWithoutSniIsReset) {
  const std::vector<std::string> probe = {"tls", kEvil};
  auto control = Control(probe);
  EXPECT_EQ(Str(control.probe, "peer_cn"), "evil.test") << control.diagnostics;
  EXPECT_EQ(CountEvents(control.events, {.kind = "conn", .server = "evil.test", .port = 443}), 1u);
  SBX_NET_SANDBOXED_HALF();
  auto run = Sandboxed(Allowlist({"pypi.test"}), probe);
  ASSERT_TRUE(run.ran);
  ExpectReset(run.probe);
  EXPECT_EQ(Str(run.probe, "stage"), "handshake") << run.diagnostics;
  EXPECT_EQ(CountEvents(run.events, {.server = "evil.test"}), 0u);
  ExpectRecord(ReadAuditLog(run.result), ConnDenied("no_rule", Endpoint(kEvil, 443)));
}

TEST_F(NetworkAllowlist, Net15IpLiteralWithAnAllowedSniIsRedialledByName) {
  const std::vector<std::string> probe = {"tls", kEvil, "--sni", "pypi.test"};
  auto control = Control(probe);
  EXPECT_EQ(Str(control.probe, "peer_cn"), "evil.test") << "unsandboxed, the literal decides";
  SBX_NET_SANDBOXED_HALF();
  auto run = Sandboxed(Allowlist({"pypi.test"}), probe);
  ASSERT_TRUE(run.ran);
  EXPECT_EQ(Str(run.probe, "peer_cn"), "pypi.test") << run.diagnostics;
  EXPECT_EQ(Str(run.probe, "body"), "pypi.test") << run.diagnostics;
  EXPECT_EQ(CountEvents(run.events, {.server = "evil.test"}), 0u);
  EXPECT_EQ(CountEvents(run.events, {.kind = "request", .server = "pypi.test", .port = 443}), 1u);
  auto log = ReadAuditLog(run.result);
  AuditMatch allowed = ConnAllowed("pypi.test", "sni", Endpoint(kPypi, 443));
  allowed.dst = Endpoint(kEvil, 443);
  ExpectRecord(log, allowed);
}

// A ClientHello cut into two handshake records (in two TCP segments) is as valid as one:
// netd reassembles it, reads the server name and lets the connection through, wherever the
// cut falls (inside the handshake header, the cipher suites, the server_name extension).
TEST_F(NetworkAllowlist, AClientHelloSplitAcrossTwoRecordsIsAccepted) {
  const std::vector<std::string> cuts = {"2", "4", "100", "150", "200"};
  auto probe = [](const std::string& at) {
    return std::vector<std::string>{"tls_split", "pypi.test", "--sni", "pypi.test", "--at", at};
  };
  for (const std::string& at : cuts) {
    auto control = Control(probe(at));
    EXPECT_EQ(Str(control.probe, "body"), "pypi.test") << at << ": " << control.diagnostics;
  }
  SBX_NET_SANDBOXED_HALF();
  for (const std::string& at : cuts) {
    SCOPED_TRACE(at);
    auto run = Sandboxed(Allowlist({"pypi.test"}), probe(at));
    ASSERT_TRUE(run.ran);
    EXPECT_EQ(Int(run.probe, "split_at"), std::stol(at)) << run.diagnostics;
    EXPECT_GT(Int(run.probe, "hello_bytes"), std::stol(at)) << "both records carry bytes";
    EXPECT_EQ(Int(run.probe, "status"), 200) << run.diagnostics;
    EXPECT_EQ(Str(run.probe, "body"), "pypi.test") << run.diagnostics;
    ExpectRecord(ReadAuditLog(run.result),
                 ConnAllowed("pypi.test", "fakeip", Endpoint(kPypi, 443)));
  }
}

// A client that asked the sandbox's DNS for a name and then hides it (no server_name) shows
// nothing netd can match: refused like a mismatch, since the name must equal the SNI.
TEST_F(NetworkAllowlist, AClientHelloWithoutServerNameToAFakeAddressIsRefused) {
  const std::vector<std::string> tls = {"tls", "pypi.test", "--host", "pypi.test"};
  auto control = Control(tls);
  EXPECT_EQ(Str(control.probe, "body"), "pypi.test") << control.diagnostics;
  SBX_NET_SANDBOXED_HALF();
  auto run = Sandboxed(Allowlist({"pypi.test"}), tls);
  ASSERT_TRUE(run.ran);
  ExpectReset(run.probe);
  EXPECT_EQ(CountEvents(run.events, {.kind = "request"}), 0u);
  AuditMatch sni = ConnDenied("sni_mismatch");
  sni.name = "pypi.test";
  ExpectRecord(ReadAuditLog(run.result), sni);
}

TEST_F(NetworkAllowlist, Net16SniOrHostOtherThanTheFakeIpsNameIsRefused) {
  const std::vector<std::string> tls = {"tls", "pypi.test", "--sni", "evil.test"};
  const std::vector<std::string> http = {"http", "pypi.test", "--host", "evil.test"};
  auto control_tls = Control(tls), control_http = Control(http);
  EXPECT_EQ(Int(control_tls.probe, "status"), 200) << control_tls.diagnostics;
  EXPECT_EQ(Int(control_http.probe, "status"), 200) << control_http.diagnostics;
  SBX_NET_SANDBOXED_HALF();
  const auto policy = Allowlist({"pypi.test:80,443"});
  auto run_tls = Sandboxed(policy, tls);
  ASSERT_TRUE(run_tls.ran);
  ExpectReset(run_tls.probe);
  auto run_http = Sandboxed(policy, http);
  ASSERT_TRUE(run_http.ran);
  ExpectBlockedByPolicy(run_http.probe);
  for (const auto* run : {&run_tls, &run_http}) {
    // netd may dial pypi.test early, but nothing may be sent there.
    EXPECT_EQ(CountEvents(run->events, {.kind = "request"}), 0u);
    EXPECT_EQ(CountEvents(run->events, {.server = "evil.test"}), 0u);
  }
  AuditMatch sni = ConnDenied("sni_mismatch"), host = ConnDenied("host_mismatch");
  sni.name = host.name = "pypi.test";
  ExpectRecord(ReadAuditLog(run_tls.result), sni);
  ExpectRecord(ReadAuditLog(run_http.result), host);
}

TEST_F(NetworkAllowlist, Net17AllowedNameOnAnotherPortIsReset) {
  for (int port : {nettest::kSshPort, nettest::kAltHttpsPort}) {
    auto control = Control({"banner", "pypi.test", std::to_string(port)});
    EXPECT_NE(Str(control.probe, "banner").find("pypi.test"), std::string::npos)
        << control.diagnostics;
  }
  SBX_NET_SANDBOXED_HALF();
  for (int port : {nettest::kSshPort, nettest::kAltHttpsPort}) {
    SCOPED_TRACE(port);
    auto run = Sandboxed(Allowlist({"pypi.test"}), {"banner", "pypi.test", std::to_string(port)});
    ASSERT_TRUE(run.ran);
    ExpectReset(run.probe);
    EXPECT_EQ(CountEvents(run.events, {.server = "pypi.test", .port = port}), 0u);
    AuditMatch denied = ConnDenied("port");
    denied.name = "pypi.test";
    denied.dst_port = port;
    ExpectRecord(ReadAuditLog(run.result), denied);
  }
}

// An allowed name on a port where nobody listens: the kernel refuses it outside; inside, netd
// has accepted the sandbox's connection before it dials, so the code sees a reset, and the log
// says the upstream failed (not the policy).
TEST_F(NetworkAllowlist, Net32AnAllowedPortNobodyListensOnIsResetAndLoggedAsUpstreamError) {
  constexpr int kClosedPort = 9;
  const std::vector<std::string> probe = {"banner", "pypi.test", std::to_string(kClosedPort)};
  auto control = Control(probe);
  EXPECT_EQ(Str(control.probe, "errno_name"), "ECONNREFUSED") << control.diagnostics;
  SBX_NET_SANDBOXED_HALF();
  auto run = Sandboxed(Allowlist({"pypi.test:" + std::to_string(kClosedPort)}), probe);
  ASSERT_TRUE(run.ran);
  ExpectReset(run.probe);
  AuditMatch failed = ConnDenied("upstream_error");
  failed.name = "pypi.test";
  failed.dst_port = kClosedPort;
  ExpectRecord(ReadAuditLog(run.result), failed);
}

}  // namespace
}  // namespace sbx::testing
