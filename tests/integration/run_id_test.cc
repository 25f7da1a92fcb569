// One run id per run: minted once, it names the run's cgroup and is in its result (the network
// log's records carry it too: tests/integration/network_audit.cc checks that on every
// allowlist run).
#include <unistd.h>

#include <chrono>
#include <future>
#include <string>
#include <thread>

#include "sandbox/cgroup/cgroup.h"
#include "sandbox/launch/run_result.h"
#include "tests/integration/sandbox_fixture.h"

namespace sbx::testing {
namespace {

TEST(RunId, TheRunsCgroupIsNamedByTheIdInItsResult) {
  ASSERT_TRUE(CgroupsOf(::getpid()).empty()) << "a run of this process is still going";
  auto run = std::async(std::launch::async, [] { return RunInSandbox({"/bin/sleep", "1"}); });
  std::vector<std::string> seen;
  for (int i = 0; i < 500 && seen.empty(); ++i) {
    seen = CgroupsOf(::getpid());
    if (seen.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  const RunResult result = run.get();
  ASSERT_EQ(result.status, RunStatus::kExited) << result.setup_error;
  ASSERT_TRUE(IsValidRunId(result.run_id)) << "'" << result.run_id << "'";
  ASSERT_FALSE(seen.empty()) << "the run's cgroup was never seen while it ran";
  const std::string name = "sbx-" + std::to_string(::getpid()) + "-" + result.run_id;
  for (const std::string& path : seen) EXPECT_EQ(path.substr(path.rfind('/') + 1), name) << path;
  // And the CLI's JSON says the same id.
  EXPECT_NE(RunResultToJson(result).find("\"run_id\":\"" + result.run_id + "\""), std::string::npos);
}

TEST(RunId, EachRunHasItsOwn) {
  const RunResult first = RunInSandbox({"/bin/true"});
  const RunResult second = RunInSandbox({"/bin/true"});
  EXPECT_TRUE(IsValidRunId(first.run_id)) << first.run_id;
  EXPECT_NE(first.run_id, second.run_id);
}

}  // namespace
}  // namespace sbx::testing
