// Limits and supervision on the real kernel: memory, pids, timeout, output, process trees.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "tests/integration/sandbox_fixture.h"

namespace sbx::testing {
namespace {

using Clock = std::chrono::steady_clock;


// In the cgroup v2 VM (tools/vm) v2 must win; on a v1 hybrid host such as CI, v1.
std::string ExpectedCgroupMechanism() { return InCgroup2Vm() ? "cgroup_v2" : "cgroup_v1"; }

Policy WithTimeout(double seconds) {
  Policy policy;
  policy.limits.timeout_seconds = seconds;
  return policy;
}

TEST(Limits, MemoryBombIsOomKilled) {
  Policy policy;
  policy.limits.memory_bytes = 64ull << 20;
  // Bounded: at most 1 GiB in 8 MiB steps, far above the 64 MiB limit.
  RunResult result = RunInSandbox(
      {"/usr/bin/python3", "-c", "chunks = []\nfor _ in range(128): chunks.append(bytearray(8 << 20))\nprint('survived')"},
      policy);
  EXPECT_EQ(result.status, RunStatus::kOomKilled) << RunStatusName(result.status) << result.stderr_data;
  EXPECT_EQ(ExitCodeFor(result), 137);
  EXPECT_EQ(result.stdout_data, "");
  EXPECT_EQ(MechanismOf(result, "memory"), ExpectedCgroupMechanism());
}

TEST(Limits, ForkBombIsContained) {
  Policy policy;
  policy.limits.pids = 16;
  // Bounded: 200 forks at most, each child sleeps briefly and exits.
  RunResult result = RunInSandbox(
      {"/usr/bin/python3", "-c",
       "import os, sys, time\n"
       "for i in range(200):\n"
       "    try:\n        pid = os.fork()\n"
       "    except OSError as e:\n        print('fork failed at', i, e.errno); sys.exit(3)\n"
       "    if pid == 0:\n        time.sleep(2); os._exit(0)\n"
       "print('all forked')\n"},
      policy);
  EXPECT_EQ(result.status, RunStatus::kPidsLimit) << RunStatusName(result.status) << result.stderr_data;
  EXPECT_NE(result.stdout_data.find("fork failed at"), std::string::npos) << result.stdout_data;
  EXPECT_NE(result.stdout_data.find(" 11\n"), std::string::npos) << "EAGAIN expected: " << result.stdout_data;
  EXPECT_EQ(MechanismOf(result, "pids"), ExpectedCgroupMechanism());
}

TEST(Limits, TimeoutKillsEvenProcessesThatIgnoreSigtermOrStop) {
  auto start = Clock::now();
  RunResult result = RunInSandbox(
      {"/bin/sh", "-c",
       "trap '' TERM; (trap '' TERM; sleep 1000) & sh -c 'kill -STOP $$; sleep 1000' & "
       "setsid sleep 1000 & echo started; sleep 1000"},
      WithTimeout(1.0));
  double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  EXPECT_EQ(result.status, RunStatus::kTimedOut);
  EXPECT_EQ(ExitCodeFor(result), 124);
  EXPECT_EQ(result.stdout_data, "started\n");  // output before the kill is kept
  EXPECT_LT(elapsed, 1.0 + 0.5 + 1.0 * WallClockScale());  // timeout + grace + slack
  EXPECT_TRUE(HostProcessesWith("sleep 1000").empty());
}

TEST(Limits, TimeoutHoldsWhileTheProgramFloodsItsOutput) {
  auto start = Clock::now();
  RunResult result = RunInSandbox(
      {"/usr/bin/python3", "-c",
       "import fcntl, os\n"
       "fcntl.fcntl(1, 1031, 1 << 20)  # F_SETPIPE_SZ: a big pipe, to outrun the reader\n"
       "block = b'x' * (1 << 20)\n"
       "while True: os.write(1, block)\n"},
      // Scaled: under emulation python3 alone can take most of a second to start, and the
      // flood has to outrun the cap before the timeout for the test to mean anything.
      WithTimeout(1.0 * WallClockScale()));
  double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  EXPECT_EQ(result.status, RunStatus::kTimedOut);
  EXPECT_TRUE(result.stdout_truncated) << "bytes seen: " << result.stdout_data.size();
  EXPECT_LT(elapsed, (1.0 + 0.5 + 1.0) * WallClockScale());
}

TEST(Limits, DaemonizedGrandchildDiesWhenTheProgramExits) {
  RunResult result = RunInSandbox(
      {"/bin/sh", "-c", "(setsid sh -c 'sleep 1001' </dev/null >/dev/null 2>&1 &); exit 0"});
  EXPECT_EQ(result.status, RunStatus::kExited);
  EXPECT_TRUE(HostProcessesWith("sleep 1001").empty());
}

TEST(Limits, BackgroundChildHoldingStdoutDoesNotHang) {
  auto start = Clock::now();
  RunResult result = RunInSandbox({"/bin/sh", "-c", "sleep 1002 & echo done"});
  EXPECT_EQ(result.stdout_data, "done\n");
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - start).count(), 10.0 * WallClockScale());
  EXPECT_TRUE(HostProcessesWith("sleep 1002").empty());
}

TEST(Limits, HugeOutputIsCappedKeepingHeadAndTail) {
  Policy policy;
  policy.limits.output_bytes = 1 << 20;
  RunResult result = RunInSandbox(
      {"/bin/sh", "-c", "echo START; head -c 1000000000 /dev/zero | tr '\\0' x; echo; echo END"}, policy);
  EXPECT_EQ(result.status, RunStatus::kExited);
  EXPECT_TRUE(result.stdout_truncated);
  EXPECT_LT(result.stdout_data.size(), (1u << 20) + 100);
  EXPECT_EQ(result.stdout_data.rfind("START\n", 0), 0u);
  EXPECT_EQ(result.stdout_data.substr(result.stdout_data.size() - 4), "END\n");
  EXPECT_NE(result.stdout_data.find("bytes cut]"), std::string::npos);
}

TEST(Limits, ExitCodesFollowTheTable) {
  EXPECT_EQ(ExitCodeFor(RunInSandbox({"/bin/sh", "-c", "exit 7"})), 7);
  RunResult missing = RunInSandbox({"no-such-program"});
  EXPECT_EQ(ExitCodeFor(missing), 127);
  RunResult not_executable = RunInSandbox({"/etc/hostname"});
  EXPECT_EQ(ExitCodeFor(not_executable), 126);
  RunResult killed = RunInSandbox({"/bin/sh", "-c", "kill -TERM $$"});
  EXPECT_EQ(killed.status, RunStatus::kSignaled);
  EXPECT_EQ(ExitCodeFor(killed), 143);
}

TEST(Limits, FileSizeLimitStopsLargeWrites) {
  Policy policy;
  policy.limits.file_size_bytes = 1 << 20;
  RunResult result = RunInSandbox({"/bin/sh", "-c", "head -c 5000000 /dev/zero > /tmp/big; echo $?; wc -c < /tmp/big"}, policy);
  EXPECT_EQ(result.stdout_data, "153\n1048576\n") << result.stderr_data;  // SIGXFSZ
}

TEST(Limits, ResultReportsEnforcementAndUsage) {
  RunResult result = RunInSandbox({"/usr/bin/python3", "-c", "x = bytearray(32 << 20); sum(range(3000000))"});
  EXPECT_EQ(result.status, RunStatus::kExited) << result.stderr_data;
  EXPECT_GE(result.peak_memory_bytes, 32ull << 20);
  EXPECT_GT(result.cpu_ms, 0u);
  EXPECT_EQ(MechanismOf(result, "memory"), ExpectedCgroupMechanism());
}

}  // namespace
}  // namespace sbx::testing
