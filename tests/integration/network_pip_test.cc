// pip installs a wheel from the small internet's package index
// (pypi.test, PEP 503 pages from tests/net/pypi_index.py) when the policy allows the index,
// and fails at name resolution, with nothing sent to the index, when it does not. The control
// runs the same pip install unsandboxed in T with the host's pip.
#include <string>

#include "tests/integration/network_audit.h"
#include "tests/integration/network_fixture.h"
#include "tests/integration/sandbox_fixture.h"

namespace sbx::testing {
namespace {

using nettest::CountEvents;

const std::string kPypi(nettest::AddressOf("pypi.test"));
const std::vector<std::string> kPipProbe = {"pip", "sbx-test-pkg", "--index-url",
                                            "https://pypi.test/simple"};

// How many requests the index got for `path`.
size_t RequestsFor(const std::vector<nlohmann::json>& events, const std::string& path) {
  return CountEvents(events, {.kind = "request", .server = "pypi.test", .path = path});
}

const std::string kProjectPage = "/simple/sbx-test-pkg/";
const std::string kWheelPath = std::string("/packages/") + nettest::kTestWheel;

// pip installed the package and a fresh python3 imported it from the target directory.
void ExpectInstalled(const ProbeRun& run) {
  EXPECT_EQ(Int(run.probe, "exit_code"), 0) << run.diagnostics;
  EXPECT_EQ(run.probe.value("fetch_errors", nlohmann::json()), nlohmann::json::array())
      << run.diagnostics;
  const auto imported = run.probe.value("import", nlohmann::json::object());
  EXPECT_EQ(Int(imported, "exit_code"), 0) << run.diagnostics;
  EXPECT_EQ(Str(imported, "stdout"), "42") << run.diagnostics;
  EXPECT_EQ(RequestsFor(run.events, kProjectPage), 1u) << run.diagnostics;
  EXPECT_EQ(RequestsFor(run.events, kWheelPath), 1u) << run.diagnostics;
}

TEST_F(NetworkAllowlist, Net12PipInstallsAWheelFromAnAllowedIndex) {
  ExpectInstalled(Control(kPipProbe));
  SBX_NET_SANDBOXED_HALF();
  auto run = Sandboxed(Allowlist({"pypi.test"}), kPipProbe);
  ASSERT_TRUE(run.ran);
  ExpectInstalled(run);
  auto log = ReadAuditLog(run.result);
  ExpectRecord(log, DnsAllowed("pypi.test", "allow[0]"));
  ExpectRecord(log, ConnAllowed("pypi.test", "fakeip", Endpoint(kPypi, nettest::kHttpsPort)));
  ExpectNetworkSummary(run.result, 1, 0);
}

TEST_F(NetworkAllowlist, Net12PipFailsAtTheNameWhenTheIndexIsNotAllowed) {
  ExpectInstalled(Control(kPipProbe));
  SBX_NET_SANDBOXED_HALF();
  auto run = Sandboxed(Allowlist({"api.test"}), kPipProbe);
  ASSERT_TRUE(run.ran);
  EXPECT_EQ(Int(run.probe, "exit_code"), 1) << run.diagnostics;
  // The project page could not be fetched because the name did not resolve (urllib3's
  // NewConnectionError around EAI_NONAME, "[Errno -2]"), so pip found no candidate.
  const auto fetch_errors = run.probe.value("fetch_errors", nlohmann::json::array());
  ASSERT_EQ(fetch_errors.size(), 1u) << run.diagnostics;
  const std::string fetch_error = fetch_errors[0].get<std::string>();
  EXPECT_NE(fetch_error.find("https://pypi.test/simple/sbx-test-pkg/"), std::string::npos)
      << fetch_error;
  EXPECT_NE(fetch_error.find("Failed to establish a new connection: [Errno -2] Name or service "
                             "not known"),
            std::string::npos)
      << fetch_error;
  EXPECT_NE(Str(run.probe, "stderr").find("No matching distribution found for sbx-test-pkg"),
            std::string::npos)
      << run.diagnostics;
  EXPECT_FALSE(run.probe.contains("import")) << run.diagnostics;
  EXPECT_LT(Number(run.probe, "ms"), 20000 * WallClockScale()) << "retries and timeouts bounded";
  EXPECT_EQ(CountEvents(run.events, {.server = "pypi.test"}), 0u) << run.diagnostics;
  EXPECT_EQ(CountEvents(run.events, {.kind = "dns"}), 0u) << "the stub must not forward";
  auto log = ReadAuditLog(run.result);
  ExpectRecord(log, DnsDenied("pypi.test"));
  ExpectNoRecord(log, ConnAllowed("pypi.test", "", ""));
  ExpectNetworkSummary(run.result, 0, 1, "pypi.test");
}

}  // namespace
}  // namespace sbx::testing
