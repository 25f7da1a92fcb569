// Unit tests for the exit-code table, rlimit planning and the JSON result.
#include "sandbox/launch/run_result.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <nlohmann/json.hpp>

#include "sandbox/isolation/rlimits.h"

namespace sbx {
namespace {

RunResult With(RunStatus status, int code = 0, int signal = 0) {
  RunResult result;
  result.status = status;
  result.exit_code = code;
  result.signal = signal;
  return result;
}

TEST(ExitCode, FollowsTheTable) {
  EXPECT_EQ(ExitCodeFor(With(RunStatus::kExited, 3)), 3);
  EXPECT_EQ(ExitCodeFor(With(RunStatus::kSignaled, 0, 15)), 143);
  EXPECT_EQ(ExitCodeFor(With(RunStatus::kTimedOut, 0, 9)), 124);
  EXPECT_EQ(ExitCodeFor(With(RunStatus::kSetupFailed)), 125);
  EXPECT_EQ(ExitCodeFor(With(RunStatus::kCancelled)), 143);
  EXPECT_EQ(ExitCodeFor(With(RunStatus::kCancelled, 0, SIGINT)), 130);  // the signal that cancelled it
  EXPECT_STREQ(RunStatusName(RunStatus::kCancelled), "cancelled");
  EXPECT_EQ(ExitCodeFor(With(RunStatus::kOomKilled, 0, 9)), 137);
  EXPECT_EQ(ExitCodeFor(With(RunStatus::kSeccompViolation, 0, 31)), 159);
  RunResult missing = With(RunStatus::kExited, 127);
  missing.exec_failure_code = 127;
  EXPECT_EQ(ExitCodeFor(missing), 127);
}

TEST(RunResultJson, HasTheContractFields) {
  RunResult result = With(RunStatus::kExited, 0);
  result.stdout_data = std::string("ok \xff\n");  // invalid UTF-8 must not break the JSON
  result.enforcement = {{"memory", "cgroup_v1"}};
  auto json = nlohmann::json::parse(RunResultToJson(result));
  for (const char* key : {"status", "exit_code", "signal", "wall_ms", "cpu_ms", "peak_memory_bytes",
                          "stdout", "stderr", "stdout_truncated", "stderr_truncated", "enforcement",
                          "degraded"})
    EXPECT_TRUE(json.contains(key)) << key;
  EXPECT_EQ(json["status"], "exited");
  EXPECT_EQ(json["enforcement"]["memory"], "cgroup_v1");
}

TEST(Rlimits, FallbacksOnlyWithoutCgroup) {
  Limits limits;
  RlimitPlan with_cgroup = PlanRlimits(limits, true, true);
  EXPECT_EQ(with_cgroup.count, 3u);
  EXPECT_FALSE(with_cgroup.memory_fallback);
  RlimitPlan without = PlanRlimits(limits, false, false);
  EXPECT_EQ(without.count, 5u);
  EXPECT_TRUE(without.memory_fallback);
  EXPECT_TRUE(without.pids_fallback);
  bool saw_core_zero = false;
  for (size_t i = 0; i < without.count; ++i)
    if (without.entries[i].resource == RLIMIT_CORE) saw_core_zero = without.entries[i].value == 0;
  EXPECT_TRUE(saw_core_zero);
}

}  // namespace
}  // namespace sbx
