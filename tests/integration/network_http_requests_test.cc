// Every request on an allowed plain-HTTP connection is checked, not only the first: a later
// request (keep-alive, pipelined) or one hidden behind framing the server reads differently
// (Transfer-Encoding with Content-Length, two Content-Lengths) must not reach the allowed
// server with another Host, which a shared front end would route to that other site.
// pypi.test's server logs every request with its Host; each control sends the same bytes
// straight to it, to show the other Host arrives there when nothing stops it.
#include <string>
#include <vector>

#include "tests/integration/network_audit.h"
#include "tests/integration/network_fixture.h"
#include "tests/integration/sandbox_fixture.h"

namespace sbx::testing {
namespace {

const std::string kPypi(nettest::AddressOf("pypi.test"));

// Requests pypi.test's server logged with this Host.
size_t RequestsWithHost(const std::vector<nlohmann::json>& events, const std::string& host) {
  size_t count = 0;
  for (const auto& event : events) {
    if (Str(event, "kind") == "request" && Str(event, "server") == "pypi.test" &&
        Str(event, "host") == host) {
      ++count;
    }
  }
  return count;
}

std::vector<std::string> Smuggle(const std::string& addr, const std::string& scenario) {
  return {"smuggle", addr, scenario, "--host", "pypi.test", "--other", "evil.test"};
}

// The sandbox's run of `scenario`: the requests before the refused one answered 200, then a
// 403 naming host_mismatch, the connection closed, nothing for evil.test upstream.
void ExpectRefused(const SandboxedRun& run) {
  const nlohmann::json& statuses = run.probe["statuses"];
  ASSERT_TRUE(statuses.is_array() && !statuses.empty()) << run.diagnostics;
  EXPECT_EQ(statuses.back(), 403) << run.diagnostics;
  for (size_t i = 0; i + 1 < statuses.size(); ++i) EXPECT_EQ(statuses[i], 200) << run.diagnostics;
  EXPECT_NE(run.probe["bodies"].back().dump().find("policy: host_mismatch"), std::string::npos)
      << run.diagnostics;
  EXPECT_TRUE(run.probe.value("closed", false)) << run.diagnostics;
  EXPECT_EQ(RequestsWithHost(run.events, "evil.test"), 0u)
      << "a request for evil.test reached pypi.test's server: " << run.diagnostics;
  ExpectRecord(ReadAuditLog(run.result), ConnDenied("host_mismatch"));
}

// The control: the same bytes straight to pypi.test's server deliver a request for evil.test.
void ExpectControlReachesEvil(const ProbeRun& control) {
  EXPECT_EQ(RequestsWithHost(control.events, "evil.test"), 1u)
      << "the control's request for evil.test reaches pypi.test's server: " << control.diagnostics;
}

const nlohmann::json kPolicy = Allowlist({"pypi.test:80,443"});

TEST_F(NetworkAllowlist, HttpKeepAliveRequestsToTheAllowedHostAllPass) {
  auto control = Control(Smuggle(kPypi, "same"));
  EXPECT_EQ(RequestsWithHost(control.events, "pypi.test"), 2u) << control.diagnostics;
  SBX_NET_SANDBOXED_HALF();
  auto run = Sandboxed(kPolicy, Smuggle("pypi.test", "same"));
  ASSERT_TRUE(run.ran);
  EXPECT_EQ(run.probe["statuses"], nlohmann::json::array({200, 200})) << run.diagnostics;
  EXPECT_EQ(run.probe["bodies"], nlohmann::json::array({"pypi.test", "pypi.test"}));
  EXPECT_EQ(RequestsWithHost(run.events, "pypi.test"), 2u) << run.diagnostics;
  auto log = ReadAuditLog(run.result);
  ExpectRecord(log, ConnAllowed("pypi.test", "fakeip", Endpoint(kPypi, nettest::kHttpPort)));
  ExpectNoRecord(log, ConnDenied("host_mismatch"));
}

TEST_F(NetworkAllowlist, HttpKeepAliveRequestForAnotherHostIsRefused) {
  ExpectControlReachesEvil(Control(Smuggle(kPypi, "keepalive")));
  SBX_NET_SANDBOXED_HALF();
  auto run = Sandboxed(kPolicy, Smuggle("pypi.test", "keepalive"));
  ASSERT_TRUE(run.ran);
  // The first request was answered before the second was sent.
  EXPECT_EQ(run.probe["statuses"], nlohmann::json::array({200, 403})) << run.diagnostics;
  EXPECT_EQ(RequestsWithHost(run.events, "pypi.test"), 1u) << run.diagnostics;
  ExpectRefused(run);
}

TEST_F(NetworkAllowlist, HttpPipelinedRequestForAnotherHostIsRefused) {
  ExpectControlReachesEvil(Control(Smuggle(kPypi, "pipeline")));
  SBX_NET_SANDBOXED_HALF();
  auto run = Sandboxed(kPolicy, Smuggle("pypi.test", "pipeline"));
  ASSERT_TRUE(run.ran);
  ExpectRefused(run);
}

TEST_F(NetworkAllowlist, HttpRequestHiddenBehindAmbiguousFramingIsRefused) {
  // te_cl: Transfer-Encoding chunked and a Content-Length; cl_cl: two Content-Lengths. The
  // server reads one length, a parser taking the other would see the hidden request as body.
  for (const char* scenario : {"te_cl", "cl_cl"}) {
    SCOPED_TRACE(scenario);
    ExpectControlReachesEvil(Control(Smuggle(kPypi, scenario)));
    if (ControlsOnly()) continue;
    auto run = Sandboxed(kPolicy, Smuggle("pypi.test", scenario));
    ASSERT_TRUE(run.ran);
    EXPECT_EQ(run.probe["statuses"], nlohmann::json::array({403})) << run.diagnostics;
    ExpectRefused(run);
  }
}

// The checked (user-space) relay of plain HTTP keeps egress_bytes as the spliced one does: the
// bytes up to the limit go upstream, then the connection ends.
TEST_F(NetworkAllowlist, HttpUploadIsRelayedUpToTheEgressLimitThenCut) {
  // Larger than the first read before the decision, so most of it takes the checked relay.
  const std::string body(100000, 'u');
  const std::vector<std::string> probe = {"urlopen", "http://pypi.test/echo", "--data", body};
  auto control = Control({"urlopen", "http://" + kPypi + "/echo", "--data", body});
  EXPECT_EQ(Int(control.probe, "status"), 200) << control.diagnostics;
  SBX_NET_SANDBOXED_HALF();
  auto policy = kPolicy;
  policy["limits"] = {{"egress_bytes", "32K"}};
  auto run = Sandboxed(policy, probe);
  ASSERT_TRUE(run.ran);
  EXPECT_NE(Int(run.probe, "status"), 200) << run.diagnostics;
  const auto records = ReadAuditLog(run.result).records;
  bool cut = false;
  for (const auto& record : records) {
    if (Str(record, "end") != "limit_bytes") continue;
    cut = true;
    EXPECT_EQ(Int(record, "bytes_up"), 32 * 1024) << record;
  }
  EXPECT_TRUE(cut) << "no conn record ended limit_bytes";
}

}  // namespace
}  // namespace sbx::testing
