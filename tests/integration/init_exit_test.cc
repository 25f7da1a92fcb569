// A run without a cgroup returns as soon as the sandbox's init reports the program's end, while
// the kernel is still tearing the namespaces down (supervisor.h), and an allowlist run as soon
// as sbx-netd has sent its summary (netd_process.h). The result must still account for
// everything the sandbox's processes used, and every child must still be reaped.
#include <dirent.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "netpolicy/network_rules.h"
#include "tests/integration/sandbox_fixture.h"
#include "tests/integration/test_policy.h"

namespace sbx::testing {
namespace {

RunSpec RlimitsOnly(const std::vector<std::string>& argv) {
  RunSpec spec;
  spec.policy = Changed(spec.policy, [](Policy& p) { p.allow_degraded = {Layer::kCgroup}; });
  spec.cgroup_options.try_v2 = false;
  spec.cgroup_options.try_v1 = false;
  spec.argv = argv;
  spec.image_dir = TestImage();
  return spec;
}

Result<RunResult> RunWithRlimitsOnly(const std::vector<std::string>& argv) {
  return RunSandboxed(RlimitsOnly(argv));
}

// Processes whose parent is this process (any of its threads): /proc/PID/stat's 4th field.
std::vector<int> OwnChildren() {
  std::vector<int> children;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return children;
  while (struct dirent* entry = ::readdir(proc)) {
    const int pid = std::atoi(entry->d_name);
    if (pid <= 0) continue;
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (!std::getline(stat, line)) continue;  // gone meanwhile
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses; the last ')' ends it.
    const size_t close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 1));
    char state = 0;
    int ppid = 0;
    rest >> state >> ppid;
    if (ppid == ::getpid()) children.push_back(pid);
  }
  ::closedir(proc);
  return children;
}

// Polls until this process has no child left (each is reaped by a thread), or gives up.
void AwaitNoChildren() {
  const int polls = static_cast<int>(100 * WallClockScale());  // of 50 ms each
  for (int i = 0; i < polls && !OwnChildren().empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

TEST(InitExit, UsageOfEveryProcessIsAccountedWithoutTheReap) {
  // The memory and the CPU are a grandchild's (python under sh), so they reach the result only
  // through the init's count of what it and its children reaped.
  auto result = RunWithRlimitsOnly(
      {"/bin/sh", "-c",
       "python3 -c 'import time; x = bytearray(48 << 20); end = time.process_time() + 0.3\n"
       "while time.process_time() < end: pass'; echo done"});
  ASSERT_TRUE(result) << result.error().ToString();
  ASSERT_EQ(result->status, RunStatus::kExited) << result->stderr_data;
  EXPECT_EQ(result->stdout_data, "done\n");
  EXPECT_EQ(MechanismOf(*result, "memory"), "rlimit_as");
  EXPECT_GE(result->peak_memory_bytes, 48ull << 20);
  EXPECT_GE(result->cpu_ms, 250u);
}

TEST(InitExit, EveryInitIsReapedAfterItsRunReturns) {
  for (int i = 0; i < 10; ++i) {
    auto result = RunWithRlimitsOnly({"/bin/sh", "-c", "sleep 1005 & exit 0"});
    ASSERT_TRUE(result) << result.error().ToString();
    EXPECT_EQ(result->status, RunStatus::kExited) << result->stderr_data;
  }
  // Each init is reaped by a thread once its namespaces are gone: zombies would stay forever.
  AwaitNoChildren();
  EXPECT_TRUE(OwnChildren().empty());
  EXPECT_TRUE(HostProcessesWith("sleep 1005").empty());
}

TEST(InitExit, AllowlistRunsLeaveNeitherInitNorHelperBehind) {
  ScratchDir logs;
  auto rule = ParseNetworkRule("allowed.example", "network.allow[0]");
  ASSERT_TRUE(rule) << rule.error().ToString();
  for (int i = 0; i < 5; ++i) {
    RunSpec spec = RlimitsOnly({"/bin/true"});
    spec.policy = Changed(spec.policy, [&](Policy& p) {
      p.network = NetworkMode::kAllowlist;
      p.network_allowlist.allow.push_back(*rule);
    });
    spec.network_log_path = logs.path() + "/run" + std::to_string(i) + ".jsonl";
    auto result = RunSandboxed(spec);
    ASSERT_TRUE(result) << result.error().ToString();
    EXPECT_EQ(result->status, RunStatus::kExited) << result->stderr_data;
    // sbx-netd's summary, its last word before it is killed and reaped in the background.
    EXPECT_EQ(result->network.log_sha256.size(), 64u);
  }
  AwaitNoChildren();
  EXPECT_TRUE(OwnChildren().empty());
}

}  // namespace
}  // namespace sbx::testing
