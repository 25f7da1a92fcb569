// If sbx-netd dies mid-run the run is killed at once (network_helper_died), never left
// running with its network policy unenforced, and nothing of it survives.
#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <future>
#include <string>
#include <thread>

#include "sandbox/launcher.h"
#include "sandbox_fixture.h"
#include "tests/integration/test_policy.h"

namespace sbx {
namespace {

// The sbx-netd that this test process started (its direct child), or -1.
pid_t OurNetd() {
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return -1;
  pid_t found = -1;
  while (dirent* entry = ::readdir(proc)) {
    std::ifstream stat(std::string("/proc/") + entry->d_name + "/stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    // "pid (comm) state ppid ..."
    size_t open = line.find('('), close = line.rfind(')');
    if (open == std::string::npos || close == std::string::npos) continue;
    std::string comm = line.substr(open + 1, close - open - 1);
    int ppid = 0;
    char state = 0;
    if (std::sscanf(line.c_str() + close + 1, " %c %d", &state, &ppid) != 2) continue;
    if (comm == "sbx-netd" && ppid == ::getpid()) found = std::stoi(entry->d_name);
  }
  ::closedir(proc);
  return found;
}

TEST(NetdDeath, KillsTheRunAtOnce) {
  testing::ScratchDir logs;
  RunSpec spec;
  spec.image_dir = testing::TestImage();
  Policy policy;
  policy.network = NetworkMode::kAllowlist;
  policy.limits.timeout_seconds = 60;
  spec.policy = testing::Checked(std::move(policy));
  spec.network_log_path = logs.path() + "/network.jsonl";
  testing::ScratchDir workspace;
  spec.workspace_dir = workspace.path();
  spec.argv = {
      "/usr/bin/python3", "-c",
      "import time; print('started', flush=True); open('/workspace/started', 'w').close(); "
      "time.sleep(50)"};
  // The helper dies with the thread that started it, so the run keeps its own thread.
  auto run = std::async(std::launch::async, [&spec] { return RunSandboxed(spec); });

  pid_t helper = -1;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (helper < 0 && std::chrono::steady_clock::now() < deadline) {
    helper = OurNetd();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_GT(helper, 0) << "sbx-netd never appeared";
  // The program is running (and has printed) once its file exists.
  const std::string started = workspace.path() + "/started";
  while (::access(started.c_str(), F_OK) != 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_EQ(::access(started.c_str(), F_OK), 0) << "the program never started";
  // Through a pidfd: the pid belongs to our unreaped child, but never signal a raw pid.
  int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, helper, 0));
  ASSERT_GE(pidfd, 0);
  auto killed_at = std::chrono::steady_clock::now();
  ASSERT_EQ(::syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, nullptr, 0), 0);
  ::close(pidfd);

  auto result = run.get();
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - killed_at).count();
  ASSERT_TRUE(result) << result.error().ToString();
  EXPECT_EQ(result->status, RunStatus::kNetdDied);
  EXPECT_EQ(ExitCodeFor(*result), 125);
  EXPECT_EQ(result->stdout_data, "started\n");
  EXPECT_LT(seconds, 5.0 * testing::WallClockScale()) << "the run outlived its helper";
  EXPECT_TRUE(testing::HostProcessesWith("time.sleep(50)").empty());
}

}  // namespace
}  // namespace sbx
