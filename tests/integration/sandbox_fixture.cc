// Integration-test helpers: real sandboxes, host controls, probe staging.
#include "tests/integration/sandbox_fixture.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include "base/remove_tree.h"
#include "base/unique_fd.h"
#include "sandbox/image/image.h"
#include "sandbox/isolation/userns.h"
#include "sandbox/workspace/workspace.h"
#include "tests/support/env_flag.h"
#include "tests/integration/test_policy.h"

namespace sbx::testing {

std::string TestImage() {
  if (const char* image = std::getenv("SBX_TEST_IMAGE"); image != nullptr && *image != '\0') return image;
  auto image = FindDefaultImage();
  if (!image) {
    ADD_FAILURE() << "no image: " << image.error().ToString();
    return "/nonexistent-image";
  }
  return image->path;
}

RunResult RunInSandbox(const std::vector<std::string>& argv, const Policy& policy,
                       const std::string& workspace) {
  RunSpec spec;
  spec.policy = Checked(policy);
  spec.argv = argv;
  // An outer run mounts no image, so it needs none.
  if (policy.isolation == Isolation::kNamespaces) spec.image_dir = TestImage();
  spec.workspace_dir = workspace;
  auto result = RunSandboxed(spec);
  if (!result) {
    ADD_FAILURE() << "sbx refused: " << result.error().ToString();
    return RunResult{};
  }
  return *result;
}

std::string MechanismOf(const RunResult& result, const std::string& what) {
  for (const auto& item : result.enforcement) {
    if (item.what == what) return item.mechanism;
  }
  return "";
}

std::string ReadHostFile(const std::string& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

HostRun RunOnHost(const std::vector<std::string>& argv, const std::function<bool()>& prepare) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return {};
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(fds[1], 1);
    ::dup2(fds[1], 2);
    if (prepare && !prepare()) ::_exit(99);
    std::vector<char*> args;
    for (const auto& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  ::close(fds[1]);
  HostRun run;
  char buffer[4096];
  ssize_t n;
  while ((n = ::read(fds[0], buffer, sizeof(buffer))) > 0) run.output.append(buffer, static_cast<size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return run;
}

PersonalitySeen PersonalityUnderSetarch(const std::function<RunResult(const std::vector<std::string>&)>& run) {
  const std::vector<std::string> argv = {"/bin/cat", "/proc/self/personality"};
  const int caller = ::personality(0xffffffff);
  EXPECT_GE(caller, 0);
  EXPECT_GE(::personality(static_cast<unsigned int>(caller) | ADDR_NO_RANDOMIZE | UNAME26), 0);
  PersonalitySeen seen{RunOnHost(argv).output, run(argv)};
  ::personality(static_cast<unsigned int>(caller));
  return seen;
}

std::function<bool()> DenySyscall(long nr) {
  return [nr] {
#if defined(__x86_64__)
    constexpr uint32_t kAuditArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
    constexpr uint32_t kAuditArch = AUDIT_ARCH_AARCH64;
#endif
    sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, kAuditArch, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, static_cast<uint32_t>(nr), 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    sock_fprog program{static_cast<unsigned short>(std::size(filter)), filter};
    return ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
           ::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &program) == 0;
  };
}

std::string ProbePath(const std::string& name) { return std::string(SBX_PROBE_DIR) + "/" + name; }

void StageProbe(const std::string& name, const std::string& workspace) {
  std::ifstream in(ProbePath(name), std::ios::binary);
  ASSERT_TRUE(in) << "probe " << name << " not built";
  std::string target = workspace + "/" + name;
  {
    std::ofstream out(target, std::ios::binary);
    out << in.rdbuf();
  }
  ::chmod(target.c_str(), 0755);
}

ScratchDir::ScratchDir() {
  std::string templ = "/var/tmp/sbx-itest-XXXXXX";
  EXPECT_NE(::mkdtemp(templ.data()), nullptr);
  path_ = templ;
  // The sandbox user must be able to write here (root mode maps it to a reserved host id).
  if (::geteuid() == 0) {
    EXPECT_EQ(::chown(path_.c_str(), kRootModeHostId, kRootModeHostId), 0);
  }
}

ScratchDir::~ScratchDir() { (void)RemoveTree(path_); }

namespace {

// /proc/<pid>/<name>, "" when unreadable. read(2), not an ifstream: a process that exits between
// readdir and the read makes the read fail with ESRCH, which libstdc++'s filebuf throws on.
std::string ReadProcFile(int pid, const char* name) {
  std::string text;
  UniqueFd file(
      ::open(("/proc/" + std::to_string(pid) + "/" + name).c_str(), O_RDONLY | O_CLOEXEC));
  if (!file) return text;
  char buffer[4096];
  ssize_t got;
  while ((got = ::read(file.get(), buffer, sizeof(buffer))) > 0)
    text.append(buffer, static_cast<size_t>(got));
  return text;
}

}  // namespace

std::vector<int> HostProcessesWith(const std::string& token) {
  std::vector<int> found;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return found;
  while (struct dirent* entry = ::readdir(proc)) {
    int pid = std::atoi(entry->d_name);
    if (pid <= 0 || pid == ::getpid()) continue;
    std::string text = ReadProcFile(pid, "cmdline");
    std::replace(text.begin(), text.end(), '\0', ' ');  // argv is NUL-separated
    if (text.find(token) != std::string::npos) found.push_back(pid);
  }
  ::closedir(proc);
  return found;
}

std::vector<int> DescendantsNamed(pid_t ancestor, const std::string& comm) {
  std::map<int, std::pair<int, std::string>> parent_and_name;  // pid -> (ppid, comm)
  if (DIR* proc = ::opendir("/proc")) {
    while (struct dirent* entry = ::readdir(proc)) {
      const int pid = std::atoi(entry->d_name);
      if (pid <= 0) continue;
      const std::string stat = ReadProcFile(pid, "stat");
      // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so the last ')'.
      const size_t open = stat.find('('), close = stat.rfind(')');
      if (open == std::string::npos || close == std::string::npos) continue;
      std::istringstream rest(stat.substr(close + 1));
      std::string state;
      int ppid = 0;
      if (rest >> state >> ppid)
        parent_and_name[pid] = {ppid, stat.substr(open + 1, close - open - 1)};
    }
    ::closedir(proc);
  }
  std::vector<int> found;
  for (const auto& [pid, info] : parent_and_name) {
    if (info.second != comm) continue;
    int up = info.first;
    for (int depth = 0; up > 1 && up != ancestor && depth < 64; ++depth) {
      auto it = parent_and_name.find(up);
      up = it == parent_and_name.end() ? 0 : it->second.first;
    }
    if (up == ancestor) found.push_back(pid);
  }
  return found;
}

bool InCgroup2Vm() { return EnvFlag("SBX_IN_CGROUP2_VM"); }

std::vector<std::string> EntriesWithPrefix(const std::string& dir, const std::string& prefix) {
  std::vector<std::string> found;
  if (DIR* handle = ::opendir(dir.c_str())) {
    while (struct dirent* entry = ::readdir(handle)) {
      if (std::string(entry->d_name).rfind(prefix, 0) == 0) found.push_back(dir + "/" + entry->d_name);
    }
    ::closedir(handle);
  }
  return found;
}

// Cgroups named after `pid` in every hierarchy this process belongs to.
std::vector<std::string> CgroupsOf(pid_t pid) {
  std::vector<std::string> found;
  std::ifstream cgroups("/proc/self/cgroup");
  std::string line;
  while (std::getline(cgroups, line)) {
    auto first = line.find(':'), second = line.find(':', first + 1);
    std::string controllers = line.substr(first + 1, second - first - 1);
    std::string path = line.substr(second + 1);
    if (controllers.rfind("name=", 0) == 0) continue;
    std::string mount = controllers.empty() ? "/sys/fs/cgroup/unified" : "/sys/fs/cgroup/" + controllers;
    if (controllers.empty() && ::access("/sys/fs/cgroup/cgroup.controllers", F_OK) == 0) mount = "/sys/fs/cgroup";
    for (const std::string& parent : {mount + path, mount + path.substr(0, path.rfind('/'))}) {
      auto entries = EntriesWithPrefix(parent, "sbx-" + std::to_string(pid) + "-");
      found.insert(found.end(), entries.begin(), entries.end());
    }
  }
  return found;
}

size_t HostMountCount() {
  std::ifstream mountinfo("/proc/self/mountinfo");
  std::string line;
  size_t count = 0;
  while (std::getline(mountinfo, line)) ++count;
  return count;
}

double WallClockScale() { return InCgroup2Vm() ? 10.0 : 1.0; }

}  // namespace sbx::testing
