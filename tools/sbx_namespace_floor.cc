// sbx_namespace_floor: the least a sandbox launcher can do, for sbx_bench to measure sbx against.
//
//   sbx_namespace_floor [--limits none|auto|v1|v2] -- PROGRAM [ARG...]
//
// It does what `unshare --user --map-user=1000 --map-group=1000 --mount --pid --fork --net
// --ipc --uts` does (the namespaces, the id maps, private mount propagation, a fork into the
// new pid namespace), and with --limits the least that enforces memory (without swap), pids and
// cpu on the whole tree: a cgroup per controller made and limited before the program runs,
// entered (v2: the child starts inside it, clone3(CLONE_INTO_CGROUP); v1: one move per
// hierarchy), and removed after it; auto takes v2 where our cgroup or its parent has memory,
// pids and cpu in its subtree_control, as sbx does, and v1 otherwise. Nothing else: no root, no mounts, no filter, no init, no
// output capture. It links like sbx (a static PIE), so the two compare without a dynamic
// loader's start on either side, which costs util-linux's `unshare` several milliseconds on a
// VM where page faults are slow.
//
// It runs none of sbx's code on purpose: a floor that shared sbx's code would share its costs.
// The limits are sbx's defaults (512 MiB, 256 pids, one cpu). Exit status: the program's, or
// 125 when a step of its own fails (named on stderr).
#include <fcntl.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr char kMemoryBytes[] = "536870912";
constexpr char kPidsMax[] = "256";
constexpr char kCpuQuotaUs[] = "100000";  // per the default 100 ms period: one cpu

// The cgroups made so far, removed again on every way out, and the child once cloned: pid 1 of
// its own pid namespace and not yet reaped, so its pid names it alone and killing it ends the
// namespace.
std::vector<std::string> g_cgroups;
pid_t g_child = -1;

void RemoveCgroups() {
  // The kernel may hold a cgroup a moment after its last process is reaped.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  for (auto dir = g_cgroups.rbegin(); dir != g_cgroups.rend(); ++dir) {
    while (::rmdir(dir->c_str()) != 0 && errno == EBUSY && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  g_cgroups.clear();
}

[[noreturn]] void Fail(const std::string& what) {
  std::fprintf(stderr, "sbx_namespace_floor: %s: %s\n", what.c_str(), std::strerror(errno));
  if (g_child > 0) {
    ::kill(g_child, SIGKILL);
    while (::waitpid(g_child, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
  RemoveCgroups();
  std::exit(125);
}

void WriteFile(const std::string& path, const std::string& value) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) Fail("open(" + path + ")");
  if (::write(fd, value.data(), value.size()) != static_cast<ssize_t>(value.size()))
    Fail("write(" + path + ", " + value + ")");
  ::close(fd);
}

// The whole of a small file, with read(2): iostreams' first use in a process would add its own
// page faults to the floor's cost. Empty when it cannot be read.
std::string ReadText(const std::string& path) {
  std::string text;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return text;
  char buffer[4096];
  for (ssize_t n; (n = ::read(fd, buffer, sizeof buffer)) > 0;) text.append(buffer, static_cast<size_t>(n));
  ::close(fd);
  return text;
}

std::vector<std::string> Split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  for (size_t start = 0; start < text.size();) {
    size_t end = text.find(separator, start);
    if (end == std::string::npos) end = text.size();
    parts.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

bool ListHas(const std::string& comma_list, const std::string& word) {
  for (const std::string& item : Split(comma_list, ',')) {
    if (item == word) return true;
  }
  return false;
}

// /proc/self/cgroup and /proc/self/mountinfo, read once, by lines.
struct CgroupTables {
  std::vector<std::string> own = Split(ReadText("/proc/self/cgroup"), '\n');
  std::vector<std::string> mounts = Split(ReadText("/proc/self/mountinfo"), '\n');
};

// The host directory of our own cgroup in the hierarchy that `controller` names ("" for v2).
std::optional<std::string> OwnCgroupDir(const CgroupTables& tables, const std::string& controller) {
  std::optional<std::string> own_path;
  for (const std::string& line : tables.own) {
    size_t first = line.find(':'), second = line.find(':', first + 1);
    if (second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    if (controller.empty() ? controllers.empty() && line.compare(0, 2, "0:") == 0 : ListHas(controllers, controller))
      own_path = line.substr(second + 1);
  }
  if (!own_path) return std::nullopt;
  for (const std::string& line : tables.mounts) {
    // id parent dev root mount_point options [optional...] - fstype source super_options
    std::vector<std::string> fields = Split(line, ' ');
    size_t dash = 6;
    while (dash < fields.size() && fields[dash] != "-") ++dash;
    if (dash + 3 >= fields.size()) continue;
    const bool match = controller.empty() ? fields[dash + 1] == "cgroup2"
                                          : fields[dash + 1] == "cgroup" && ListHas(fields[dash + 3], controller);
    const std::string& root = fields[3];
    if (!match || own_path->compare(0, root.size(), root) != 0) continue;
    std::string relative = root == "/" ? *own_path : own_path->substr(root.size());
    return fields[4] + (relative == "/" ? "" : relative);
  }
  return std::nullopt;
}

bool DelegatesAll(const std::string& dir) {
  const std::vector<std::string> lines = Split(ReadText(dir + "/cgroup.subtree_control"), '\n');
  const std::string enabled = " " + (lines.empty() ? std::string() : lines.front()) + " ";
  for (const char* controller : {" memory ", " pids ", " cpu "}) {
    if (enabled.find(controller) == std::string::npos) return false;
  }
  return true;
}

// The v2 cgroup to create in: ours, else our parent, whichever delegates memory, pids and cpu.
std::optional<std::string> V2Parent(const CgroupTables& tables) {
  std::optional<std::string> own = OwnCgroupDir(tables, "");
  if (!own) return std::nullopt;
  if (DelegatesAll(*own)) return own;
  std::string parent = own->substr(0, own->rfind('/'));
  if (DelegatesAll(parent)) return parent;
  return std::nullopt;
}

// Makes the run's cgroups (g_cgroups) and writes their limits; resolves "auto".
void MakeCgroups(std::string& limits) {
  if (limits == "none") return;
  const CgroupTables tables;
  const std::optional<std::string> v2_parent = limits == "v1" ? std::nullopt : V2Parent(tables);
  if (limits == "auto") limits = v2_parent ? "v2" : "v1";
  const std::string name = "/sbx-floor-" + std::to_string(::getpid());
  auto make = [&](const std::string& controller) {
    std::optional<std::string> parent = controller.empty() ? v2_parent : OwnCgroupDir(tables, controller);
    if (!parent) {
      errno = ENOENT;
      Fail("no usable cgroup " + (controller.empty() ? std::string("v2") : "v1 " + controller) + " hierarchy");
    }
    const std::string dir = *parent + name;
    if (::mkdir(dir.c_str(), 0755) != 0) Fail("mkdir(" + dir + ")");
    g_cgroups.push_back(dir);
    return dir;
  };
  if (limits == "v2") {
    const std::string dir = make("");
    WriteFile(dir + "/memory.max", kMemoryBytes);
    WriteFile(dir + "/memory.swap.max", "0");
    WriteFile(dir + "/pids.max", kPidsMax);
    WriteFile(dir + "/cpu.max", std::string(kCpuQuotaUs) + " 100000");
  } else {
    const std::string memory = make("memory");
    WriteFile(memory + "/memory.limit_in_bytes", kMemoryBytes);
    if (::access((memory + "/memory.memsw.limit_in_bytes").c_str(), F_OK) == 0)
      WriteFile(memory + "/memory.memsw.limit_in_bytes", kMemoryBytes);
    WriteFile(make("pids") + "/pids.max", kPidsMax);
    WriteFile(make("cpu") + "/cpu.cfs_quota_us", kCpuQuotaUs);
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string limits = "none";
  int first = 1;
  if (first + 1 < argc && std::strcmp(argv[first], "--limits") == 0) {
    limits = argv[first + 1];
    first += 2;
  }
  if (first < argc && std::strcmp(argv[first], "--") == 0) ++first;
  if (first >= argc || (limits != "none" && limits != "auto" && limits != "v1" && limits != "v2")) {
    std::fputs("usage: sbx_namespace_floor [--limits none|auto|v1|v2] -- PROGRAM [ARG...]\n", stderr);
    return 125;
  }
  MakeCgroups(limits);
  int cgroup_fd = -1;
  if (limits == "v2" && (cgroup_fd = ::open(g_cgroups[0].c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
    Fail("open(" + g_cgroups[0] + ")");

  const std::string uid = std::to_string(::geteuid()), gid = std::to_string(::getegid());
  if (::unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS) != 0)
    Fail("unshare");
  WriteFile("/proc/self/setgroups", "deny");
  WriteFile("/proc/self/uid_map", "1000 " + uid + " 1");
  WriteFile("/proc/self/gid_map", "1000 " + gid + " 1");
  if (::mount("none", "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) Fail("mount(/, MS_PRIVATE)");

  // v1: the child waits until it has been moved into the cgroups, so the program runs limited.
  int go[2];
  if (::pipe2(go, O_CLOEXEC) != 0) Fail("pipe2");
  struct clone_args args {};
  args.exit_signal = SIGCHLD;
  if (cgroup_fd >= 0) {
    args.flags = CLONE_INTO_CGROUP;
    args.cgroup = static_cast<uint64_t>(cgroup_fd);
  }
  const pid_t child = static_cast<pid_t>(::syscall(SYS_clone3, &args, sizeof(args)));
  if (child < 0) Fail("clone3");
  if (child > 0) g_child = child;
  if (child == 0) {
    char byte;
    ::close(go[1]);
    if (::read(go[0], &byte, 1) != 1) ::_exit(125);
    ::execvp(argv[first], argv + first);
    ::_exit(127);
  }
  ::close(go[0]);
  if (limits == "v1") {
    for (const std::string& dir : g_cgroups) WriteFile(dir + "/cgroup.procs", std::to_string(child));
  }
  if (::write(go[1], "g", 1) != 1) Fail("write(go)");
  ::close(go[1]);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  RemoveCgroups();
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
