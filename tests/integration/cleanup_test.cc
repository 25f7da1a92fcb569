// Nothing outlives a run: processes, cgroups, temporary workspaces, host mounts.
#include <dirent.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "sandbox/workspace/workspace.h"
#include "tests/integration/sandbox_fixture.h"

namespace sbx::testing {
namespace {

TEST(Cleanup, TwoHundredMixedRunsLeaveNothingBehind) {
  auto state = StateDirectory();
  ASSERT_TRUE(state) << state.error().ToString();
  const std::string ws_prefix = "ws-" + std::to_string(::getpid()) + "-";
  size_t mounts_before = HostMountCount();
  Policy short_timeout;
  short_timeout.limits.timeout_seconds = 0.3;
  Policy small_memory;
  small_memory.limits.memory_bytes = 16ull << 20;
  int statuses[8] = {};
  for (int i = 0; i < 200; ++i) {
    RunResult result;
    switch (i % 5) {
      case 0: result = RunInSandbox({"/bin/true"}); break;
      case 1: result = RunInSandbox({"/bin/sh", "-c", "sleep 1003 & exit 3"}); break;
      case 2: result = RunInSandbox({"/bin/sh", "-c", "sleep 1003"}, short_timeout); break;
      case 3: result = RunInSandbox({"/bin/sh", "-c", "head -c 64M /dev/zero | tail -c 1 > /dev/null; "
                                                      "x=$(head -c 40000000 /dev/zero | tr '\\0' a); echo ${#x}"},
                                    small_memory);
        break;
      case 4: result = RunInSandbox({"no-such-command"}); break;
    }
    statuses[static_cast<int>(result.status)]++;
  }
  EXPECT_EQ(statuses[static_cast<int>(RunStatus::kTimedOut)], 40);
  EXPECT_EQ(statuses[static_cast<int>(RunStatus::kSetupFailed)], 0);
  EXPECT_TRUE(HostProcessesWith("sleep 1003").empty());
  EXPECT_TRUE(CgroupsOf(::getpid()).empty());
  EXPECT_TRUE(EntriesWithPrefix(*state, ws_prefix).empty());
  EXPECT_EQ(HostMountCount(), mounts_before);
}

TEST(Cleanup, KillingTheRunnerKillsTheSandbox) {
  pid_t runner = ::fork();
  if (runner == 0) {
    ::execl(SBX_BINARY, SBX_BINARY, "run", "--", "/bin/sh", "-c", "sleep 1004 & sleep 1004", nullptr);
    ::_exit(127);
  }
  // The sleeps themselves, found by their parent chain: the runner's own command line and the
  // shell's hold "sleep 1004" long before either sleep runs.
  const int polls = static_cast<int>(100 * WallClockScale());  // of 50 ms each
  for (int i = 0; i < polls && DescendantsNamed(runner, "sleep").size() < 2; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const std::vector<int> sleeps = DescendantsNamed(runner, "sleep");
  if (sleeps.size() != 2) {
    ::kill(runner, SIGKILL);
    ::waitpid(runner, nullptr, 0);
    FAIL() << sleeps.size() << " sleeps under the runner, expected 2";
  }
  ::kill(runner, SIGKILL);
  ::waitpid(runner, nullptr, 0);
  for (int i = 0; i < polls && !HostProcessesWith("sleep 1004").empty(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_TRUE(HostProcessesWith("sleep 1004").empty());
  // The next run removes the dead runner's cgroups and workspace. A cgroup whose last task
  // the kernel is still tearing down cannot be removed yet (rmdir: EBUSY); the run after
  // that removes it, so allow a few runs, never a leftover.
  for (int i = 0; i < 20; ++i) {
    RunInSandbox({"/bin/true"});
    if (CgroupsOf(runner).empty()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<int>(100 * WallClockScale())));
  }
  EXPECT_TRUE(CgroupsOf(runner).empty());
  EXPECT_TRUE(CgroupsOf(::getpid()).empty()) << "this process's own runs left a cgroup";
  auto state = StateDirectory();
  ASSERT_TRUE(state);
  EXPECT_TRUE(EntriesWithPrefix(*state, "ws-" + std::to_string(runner) + "-").empty());
}

}  // namespace
}  // namespace sbx::testing
