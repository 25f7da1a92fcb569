// Tests for RunCgroup on the real kernel: limits on disk, OOM, pids and cpu enforcement,
// removal, stale reaping. Each bomb is bounded and runs only inside a limited cgroup.
#include "sandbox/cgroup/cgroup.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <ostream>
#include <string>
#include <vector>

#include "sandbox/cgroup/cgroup_internal.h"
#include "tests/support/env_flag.h"

namespace sbx {

// gtest names the parameter in test listings and ctest with this (found by ADL, so not in the
// anonymous namespace).
void PrintTo(CgroupVersion version, std::ostream* out) {
  *out << (version == CgroupVersion::kV2 ? "cgroup v2" : "cgroup v1");
}

namespace {

using cgroup_internal::ReadSmallFile;

constexpr char kNoV2[] = "cgroup v2 with memory+pids+cpu delegated is not available on this host";
constexpr char kNoV1[] =
    "cgroup v1 with writable memory, pids and cpu hierarchies is not available on this host";

std::string VersionName(CgroupVersion version) {
  return version == CgroupVersion::kV2 ? "V2" : "V1";
}

CgroupOptions OptionsFor(CgroupVersion version) {
  CgroupOptions options;
  options.try_v2 = version == CgroupVersion::kV2;
  options.try_v1 = version == CgroupVersion::kV1;
  // The VM harness may point at its cgroup2 mount explicitly.
  if (const char* root = std::getenv("SBX_TEST_CGROUP2_ROOT")) options.v2_root = root;
  return options;
}

Limits TestLimits() {
  Limits limits;
  limits.memory_bytes = 64ull << 20;
  limits.pids = 16;
  limits.cpus = 0.5;
  return limits;
}

std::string Trimmed(const std::string& path) {
  auto text = ReadSmallFile(path);
  if (!text) return "<" + text.error().ToString() + ">";
  std::string value = *text;
  while (!value.empty() && value.back() == '\n') value.pop_back();
  return value;
}

std::string Dirname(const std::string& path) { return path.substr(0, path.rfind('/')); }

bool Exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

// Removes directories a test made by hand, even when an assertion fails first.
struct DirCleanup {
  std::vector<std::string> dirs;
  ~DirCleanup() {
    for (const std::string& dir : dirs) ::rmdir(dir.c_str());
  }
};

// ---- bodies run by the child, inside the cgroup; each is bounded ----

int TouchUpTo256MiB() {
  constexpr size_t kStep = 1 << 20;
  for (int i = 0; i < 256; ++i) {
    void* block =
        ::mmap(nullptr, kStep, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (block == MAP_FAILED) return 2;
    std::memset(block, 1, kStep);
  }
  return 0;
}

// Exit 0 when a fork failed with EAGAIN (the pids limit), 1 when none failed, 2 otherwise.
int ForkUpTo64() {
  int hold[2];
  if (::pipe(hold) != 0) return 3;
  int result = 1;
  int started = 0;
  pid_t children[64];
  for (int i = 0; i < 64; ++i) {
    pid_t pid = ::fork();
    if (pid == 0) {
      ::close(hold[1]);
      char byte;
      while (::read(hold[0], &byte, 1) < 0 && errno == EINTR) {
      }
      ::_exit(0);  // EOF: the parent is done counting
    }
    if (pid < 0) {
      result = errno == EAGAIN ? 0 : 2;
      break;
    }
    children[started++] = pid;
  }
  ::close(hold[1]);
  for (int i = 0; i < started; ++i) ::waitpid(children[i], nullptr, 0);
  return result;
}

int BusyOneSecond() {
  timespec start, now;
  ::clock_gettime(CLOCK_MONOTONIC, &start);
  do {
    ::clock_gettime(CLOCK_MONOTONIC, &now);
  } while ((now.tv_sec - start.tv_sec) * 1000000000L + (now.tv_nsec - start.tv_nsec) < 1000000000L);
  return 0;
}

// Starts `body` in a child inside `cgroup`: clone3(CLONE_INTO_CGROUP) on v2, fork and
// AddProcessInParent on v1 (the child waits until it has been moved).
pid_t SpawnInCgroup(RunCgroup& cgroup, int (*body)()) {
  if (cgroup.version() == CgroupVersion::kV2) {
    clone_args args{};
    args.flags = CLONE_INTO_CGROUP;
    args.exit_signal = SIGCHLD;
    args.cgroup = static_cast<uint64_t>(cgroup.CloneIntoFd());
    long pid = ::syscall(SYS_clone3, &args, sizeof(args));
    if (pid == 0) ::_exit(body());
    return static_cast<pid_t>(pid);
  }
  int go[2];
  if (::pipe(go) != 0) return -1;
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(go[1]);
    char byte;
    if (::read(go[0], &byte, 1) != 1) ::_exit(4);
    ::_exit(body());
  }
  ::close(go[0]);
  Result<void> added = pid > 0 ? cgroup.AddProcessInParent(pid) : Result<void>(Ok{});
  EXPECT_TRUE(added) << added.error().ToString();
  if (!added && pid > 0) ::kill(pid, SIGKILL);
  (void)!::write(go[1], "g", 1);
  ::close(go[1]);
  return pid;
}

int WaitStatus(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

class CgroupTest : public ::testing::TestWithParam<CgroupVersion> {
 protected:
  // A cgroup of the parameter's version with TestLimits(), or nullopt for the caller to skip
  // with SkipReason(). Inside the cgroup v2 VM a missing v2 cgroup is a failure instead: the
  // VM exists to run these cases, and a skip there would hide that they never ran.
  std::optional<RunCgroup> Create(const std::string& run_id, const Limits& limits = TestLimits()) {
    Result<RunCgroup> cgroup = RunCgroup::CreateInParent(run_id, limits, OptionsFor(GetParam()));
    const bool must_work =
        GetParam() == CgroupVersion::kV2 && sbx::testing::EnvFlag("SBX_IN_CGROUP2_VM");
    if (!cgroup) {
      EXPECT_EQ(cgroup.error().code, ErrorCode::kUnavailable) << cgroup.error().ToString();
      EXPECT_FALSE(must_work) << "SBX_IN_CGROUP2_VM=1, yet: " << cgroup.error().ToString();
      return std::nullopt;
    }
    const CgroupEnforcement& enforcement = cgroup->enforcement();
    if (!enforcement.memory || !enforcement.pids || !enforcement.cpu) {
      EXPECT_FALSE(must_work) << "SBX_IN_CGROUP2_VM=1, yet the v2 cgroup enforces memory "
                              << enforcement.memory << ", pids " << enforcement.pids << ", cpu "
                              << enforcement.cpu;
      return std::nullopt;
    }
    return std::move(cgroup).value();
  }
  const char* SkipReason() const { return GetParam() == CgroupVersion::kV2 ? kNoV2 : kNoV1; }
};

TEST_P(CgroupTest, WritesLimitsToDisk) {
  std::optional<RunCgroup> cgroup = Create("limits");
  if (!cgroup) GTEST_SKIP() << SkipReason();
  EXPECT_EQ(cgroup->version(), GetParam());
  EXPECT_EQ(cgroup->enforcement().version, GetParam());
  std::vector<std::string> paths = cgroup->Paths();
  ASSERT_FALSE(paths.empty());
  for (const std::string& path : paths) {
    EXPECT_NE(path.find("/sbx-" + std::to_string(::getpid()) + "-limits"), std::string::npos);
  }
  if (GetParam() == CgroupVersion::kV2) {
    ASSERT_EQ(paths.size(), 1u);
    EXPECT_GE(cgroup->CloneIntoFd(), 0);
    EXPECT_EQ(Trimmed(paths[0] + "/memory.max"), "67108864");
    if (Exists(paths[0] + "/memory.swap.max")) {
      EXPECT_EQ(Trimmed(paths[0] + "/memory.swap.max"), "0");
    }
    EXPECT_EQ(Trimmed(paths[0] + "/memory.oom.group"), "1");
    EXPECT_EQ(Trimmed(paths[0] + "/pids.max"), "16");
    EXPECT_EQ(Trimmed(paths[0] + "/cpu.max"), "50000 100000");
    EXPECT_TRUE(cgroup->KillAll());  // empty cgroup: a no-op that must still succeed
  } else {
    EXPECT_EQ(cgroup->CloneIntoFd(), -1);
    EXPECT_FALSE(cgroup->KillAll());
    int checked = 0;
    for (const std::string& path : paths) {
      if (Exists(path + "/memory.limit_in_bytes")) {
        EXPECT_EQ(Trimmed(path + "/memory.limit_in_bytes"), "67108864");
        if (Exists(path + "/memory.memsw.limit_in_bytes")) {
          EXPECT_EQ(Trimmed(path + "/memory.memsw.limit_in_bytes"), "67108864");
        }
        ++checked;
      }
      if (Exists(path + "/pids.max")) {
        EXPECT_EQ(Trimmed(path + "/pids.max"), "16");
        ++checked;
      }
      if (Exists(path + "/cpu.cfs_quota_us")) {
        EXPECT_EQ(Trimmed(path + "/cpu.cfs_quota_us"), "50000");
        EXPECT_EQ(Trimmed(path + "/cpu.cfs_period_us"), "100000");
        ++checked;
      }
    }
    EXPECT_EQ(checked, 3);
  }
  ASSERT_TRUE(cgroup->RemoveInParent());
  for (const std::string& path : paths) EXPECT_FALSE(Exists(path)) << path;
  EXPECT_TRUE(cgroup->RemoveInParent());  // idempotent
}

TEST_P(CgroupTest, MemoryLimitOomKillsTheChild) {
  std::optional<RunCgroup> cgroup = Create("oom");
  if (!cgroup) GTEST_SKIP() << SkipReason();
  pid_t pid = SpawnInCgroup(*cgroup, TouchUpTo256MiB);
  ASSERT_GT(pid, 0);
  int status = WaitStatus(pid);
  ASSERT_TRUE(WIFSIGNALED(status)) << "child exited with " << WEXITSTATUS(status);
  EXPECT_EQ(WTERMSIG(status), SIGKILL);
  CgroupUsage usage = cgroup->ReadUsage();
  EXPECT_GE(usage.oom_kills, 1u);
  ASSERT_TRUE(usage.peak_memory_bytes.has_value() || GetParam() == CgroupVersion::kV2);
  if (usage.peak_memory_bytes) {
    EXPECT_LE(*usage.peak_memory_bytes, 64ull << 20);
  }
  std::vector<std::string> paths = cgroup->Paths();
  ASSERT_TRUE(cgroup->RemoveInParent());
  for (const std::string& path : paths) EXPECT_FALSE(Exists(path)) << path;
}

TEST_P(CgroupTest, OomKillsTheWholeCgroupOnV2) {
  if (GetParam() != CgroupVersion::kV2) GTEST_SKIP() << "memory.oom.group is cgroup v2 only";
  std::optional<RunCgroup> cgroup = Create("oomgroup");
  if (!cgroup) GTEST_SKIP() << SkipReason();
  // A small sibling that would outlive the memory hog by 30 s unless the OOM takes it too.
  pid_t pid = SpawnInCgroup(*cgroup, [] {
    if (::fork() == 0) {
      ::sleep(30);
      ::_exit(0);
    }
    return TouchUpTo256MiB();
  });
  ASSERT_GT(pid, 0);
  int status = WaitStatus(pid);
  ASSERT_TRUE(WIFSIGNALED(status)) << "child exited with " << WEXITSTATUS(status);
  EXPECT_EQ(WTERMSIG(status), SIGKILL);
  EXPECT_GE(cgroup->ReadUsage().oom_kills, 1u);
  const std::string events = cgroup->Paths()[0] + "/cgroup.events";
  for (int i = 0; i < 100 && Trimmed(events).find("populated 0") == std::string::npos; ++i)
    ::usleep(50 * 1000);
  EXPECT_NE(Trimmed(events).find("populated 0"), std::string::npos) << "the sibling survived";
  cgroup->KillAll();
  EXPECT_TRUE(cgroup->RemoveInParent());
}

TEST_P(CgroupTest, PidsLimitRefusesForks) {
  std::optional<RunCgroup> cgroup = Create("pids");
  if (!cgroup) GTEST_SKIP() << SkipReason();
  pid_t pid = SpawnInCgroup(*cgroup, ForkUpTo64);
  ASSERT_GT(pid, 0);
  int status = WaitStatus(pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: no fork failed, 2: a fork failed without EAGAIN";
  EXPECT_GE(cgroup->ReadUsage().pids_max_hits, 1u);
}

TEST_P(CgroupTest, CpuQuotaThrottles) {
  std::optional<RunCgroup> cgroup = Create("cpu");
  if (!cgroup) GTEST_SKIP() << SkipReason();
  pid_t pid = SpawnInCgroup(*cgroup, BusyOneSecond);
  ASSERT_GT(pid, 0);
  int status = WaitStatus(pid);
  ASSERT_TRUE(WIFEXITED(status));
  std::optional<uint64_t> cpu_ns = cgroup->ReadUsage().cpu_usage_ns;
  ASSERT_TRUE(cpu_ns.has_value());
  EXPECT_LE(*cpu_ns, 700'000'000u) << "0.5 cpu for 1 s of wall time";
  EXPECT_GE(*cpu_ns, 200'000'000u) << "the child did run";
}

TEST_P(CgroupTest, KillAllKillsEveryProcess) {
  std::optional<RunCgroup> cgroup = Create("kill");
  if (!cgroup) GTEST_SKIP() << SkipReason();
  if (GetParam() != CgroupVersion::kV2) {
    EXPECT_FALSE(cgroup->KillAll()) << "v1 has no cgroup.kill; the pid namespace does it";
    return;
  }
  pid_t pid = SpawnInCgroup(*cgroup, [] {
    for (int i = 0; i < 4; ++i) {
      if (::fork() == 0) ::pause();
    }
    ::pause();
    return 0;
  });
  ASSERT_GT(pid, 0);
  ::usleep(100 * 1000);
  ASSERT_TRUE(cgroup->KillAll());
  int status = WaitStatus(pid);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGKILL);
  // The orphans went to init; removal retries while the kernel finishes their exits.
  EXPECT_TRUE(cgroup->RemoveInParent());
}

TEST_P(CgroupTest, ReapsOnlyStaleSbxCgroupsOfDeadRunners) {
  std::vector<std::string> parents;
  {
    std::optional<RunCgroup> probe = Create("parents");
    if (!probe) GTEST_SKIP() << SkipReason();
    for (const std::string& path : probe->Paths()) parents.push_back(Dirname(path));
  }
  pid_t dead = ::fork();
  if (dead == 0) ::_exit(0);
  ASSERT_GT(dead, 0);
  WaitStatus(dead);
  ASSERT_FALSE(Exists("/proc/" + std::to_string(dead))) << "pid reused already";

  DirCleanup cleanup;
  std::vector<std::string> stale, kept;
  for (const std::string& parent : parents) {
    stale.push_back(parent + "/sbx-" + std::to_string(dead) + "-x");
    kept.push_back(parent + "/other-thing");
    kept.push_back(parent + "/sbx-1-alive");                                // pid 1 is alive
    kept.push_back(parent + "/sbx-0" + std::to_string(dead) + "-x");        // not exact
    kept.push_back(parent + "/sbx-" + std::to_string(dead) + "-bad_name");  // invalid run id
  }
  // A runner killed while removing its directories (in the reverse of their creation order)
  // leaves the first one alone.
  stale.push_back(parents.front() + "/sbx-" + std::to_string(dead) + "-first");
  for (const std::string& dir : stale) {
    ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0) << dir << ": " << std::strerror(errno);
    cleanup.dirs.push_back(dir);
  }
  for (const std::string& dir : kept) {
    ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0) << dir << ": " << std::strerror(errno);
    cleanup.dirs.push_back(dir);
  }

  std::optional<RunCgroup> cgroup = Create("reaper");
  ASSERT_TRUE(cgroup.has_value());
  for (const std::string& dir : stale) EXPECT_FALSE(Exists(dir)) << dir;
  for (const std::string& dir : kept) EXPECT_TRUE(Exists(dir)) << dir;
}

TEST_P(CgroupTest, FailedLimitWriteLeavesNothing) {
  std::vector<std::string> paths;
  {
    std::optional<RunCgroup> probe = Create("probe");
    if (!probe) GTEST_SKIP() << SkipReason();
    paths = probe->Paths();
  }
  Limits limits = TestLimits();
  limits.cpus = 1e9;  // a quota beyond the kernel's maximum: EINVAL after the mkdir
  Result<RunCgroup> cgroup = RunCgroup::CreateInParent("badcpu", limits, OptionsFor(GetParam()));
  ASSERT_FALSE(cgroup);
  EXPECT_EQ(cgroup.error().code, ErrorCode::kSetupFailed);
  EXPECT_NE(cgroup.error().message.find("cpu"), std::string::npos) << cgroup.error().message;
  for (const std::string& path : paths) {
    std::string bad = Dirname(path) + "/sbx-" + std::to_string(::getpid()) + "-badcpu";
    EXPECT_FALSE(Exists(bad)) << bad;
  }
}

INSTANTIATE_TEST_SUITE_P(Versions, CgroupTest,
                         ::testing::Values(CgroupVersion::kV2, CgroupVersion::kV1),
                         [](const auto& info) { return VersionName(info.param); });

TEST(CgroupRunId, RejectsPathInjection) {
  for (const std::string& bad :
       std::vector<std::string>{"../x", "", std::string(65, 'a'), "a/b", "\n", ".", "a b",
                                std::string("a\0b", 3), "x_y"}) {
    EXPECT_FALSE(IsValidRunId(bad)) << bad;
    Result<RunCgroup> cgroup = RunCgroup::CreateInParent(bad, TestLimits());
    ASSERT_FALSE(cgroup);
    EXPECT_EQ(cgroup.error().code, ErrorCode::kInvalidInput);
  }
  EXPECT_TRUE(IsValidRunId(std::string(64, 'a')));
  EXPECT_TRUE(IsValidRunId("run-7-ABC"));
}

// "<counter>-<8 lower-case hex digits>": a valid run id, a new one each call.
TEST(CgroupRunId, NewIdsAreACounterAndEightHexDigits) {
  const std::string first = NewRunId(), second = NewRunId();
  for (const std::string& id : {first, second}) {
    EXPECT_TRUE(IsValidRunId(id)) << id;
    const size_t dash = id.find('-');
    ASSERT_NE(dash, std::string::npos) << id;
    EXPECT_GT(dash, 0u) << id;
    EXPECT_EQ(id.find_first_not_of("0123456789"), dash) << id;
    EXPECT_EQ(id.size() - dash - 1, 8u) << id;
    EXPECT_EQ(id.find_first_not_of("0123456789abcdef", dash + 1), std::string::npos) << id;
  }
  EXPECT_NE(first, second);
  EXPECT_EQ(std::stoul(second.substr(0, second.find('-'))), std::stoul(first.substr(0, first.find('-'))) + 1);
}

TEST(CgroupRunDirName, ParsesOnlyExactNames) {
  using cgroup_internal::ParseRunDirPid;
  EXPECT_EQ(ParseRunDirPid("sbx-123-run-7"), 123);
  EXPECT_EQ(cgroup_internal::RunDirName("r"), "sbx-" + std::to_string(::getpid()) + "-r");
  for (const char* bad : {"sbx-123-", "sbx--1-x", "sbx-0123-x", "sbx-12a-x", "sbx-99999999-x",
                          "sbx-123-a/b", "xsbx-123-x", "sbx-123", "other-thing"}) {
    EXPECT_FALSE(ParseRunDirPid(bad).has_value()) << bad;
  }
}

TEST(CgroupHostPath, JoinsMountRootAndOwnPath) {
  using cgroup_internal::HostPathOf;
  cgroup_internal::MountEntry whole{"/", "/sys/fs/cgroup/memory", "cgroup", {"rw", "memory"}};
  EXPECT_EQ(HostPathOf(whole, "/"), "/sys/fs/cgroup/memory");
  EXPECT_EQ(HostPathOf(whole, "/a/b"), "/sys/fs/cgroup/memory/a/b");
  cgroup_internal::MountEntry subtree{"/a", "/mnt/cg", "cgroup2", {}};
  EXPECT_EQ(HostPathOf(subtree, "/a/b"), "/mnt/cg/b");
  EXPECT_EQ(HostPathOf(subtree, "/a"), "/mnt/cg");
  EXPECT_FALSE(HostPathOf(subtree, "/ab").has_value());
  EXPECT_FALSE(HostPathOf(whole, "/../x").has_value());
}

TEST(CgroupMounts, KeepsOnlyCgroupMountsWithTheirFields) {
  using cgroup_internal::ParseCgroupMounts;
  // Optional fields of any count before the " - ", escaped spaces in a mount point, a mount
  // whose source is named "cgroup" but whose type is not, and a line without a final newline.
  const std::string mountinfo =
      "22 1 0:21 / /proc rw,nosuid shared:12 - proc proc rw\n"
      "30 24 0:26 / /sys/fs/cgroup/unified rw,nosuid,nodev shared:9 - cgroup2 cgroup2 rw,nsdelegate\n"
      "31 24 0:27 / /sys/fs/cgroup/cpu,cpuacct rw shared:10 master:3 - cgroup cgroup rw,cpu,cpuacct\n"
      "40 1 0:40 / /mnt/my\\040tmp rw - tmpfs cgroup rw\n"
      "41 24 0:28 /sbx/run /sys/fs/cgroup/my\\040memory rw - cgroup none rw,memory";
  const std::vector<cgroup_internal::MountEntry> mounts = ParseCgroupMounts(mountinfo);
  ASSERT_EQ(mounts.size(), 3u);
  EXPECT_EQ(mounts[0].fstype, "cgroup2");
  EXPECT_EQ(mounts[0].mount_point, "/sys/fs/cgroup/unified");
  EXPECT_EQ(mounts[0].root, "/");
  EXPECT_EQ(mounts[1].fstype, "cgroup");
  EXPECT_EQ(mounts[1].super_options, (std::vector<std::string>{"rw", "cpu", "cpuacct"}));
  EXPECT_EQ(mounts[2].mount_point, "/sys/fs/cgroup/my memory");
  EXPECT_EQ(mounts[2].root, "/sbx/run");
  EXPECT_EQ(mounts[2].super_options, (std::vector<std::string>{"rw", "memory"}));
  EXPECT_TRUE(ParseCgroupMounts("").empty());
  EXPECT_TRUE(ParseCgroupMounts("garbage without a separator\n").empty());
}

TEST(CgroupDescribe, NamesWhatWasFound) {
  std::string text = DescribeCgroupSupport();
  EXPECT_NE(text.find("v2"), std::string::npos) << text;
  EXPECT_NE(text.find("v1"), std::string::npos) << text;
}

}  // namespace
}  // namespace sbx
