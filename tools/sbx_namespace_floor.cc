// sbx_namespace_floor: the least a sandbox launcher can do, for sbx_bench to measure sbx against.
//
//   sbx_namespace_floor [--limits none|auto|v1|v2] [--root IMAGE_DIR] -- PROGRAM [ARG...]
//
// It does what `unshare --user --map-user=1000 --map-group=1000 --mount --pid --fork --net
// --ipc --uts` does (the namespaces, the id maps, private mount propagation, a fork into the
// new pid namespace), and with --limits the least that enforces memory (without swap), pids and
// cpu on the whole tree: a cgroup per controller made and limited before the program runs,
// entered (v2: the child starts inside it, clone3(CLONE_INTO_CGROUP); v1: one move per
// hierarchy), and removed after it; auto takes v2 where our cgroup or its parent has memory,
// pids and cpu in its subtree_control, as sbx does, and v1 otherwise. It links like sbx (a
// static PIE), so the two compare without a dynamic loader's start on either side (util-linux's
// `unshare` pays for its loader's page faults).
//
// Without --root that is all: the host's root, no mounts, no filter. With --root it also builds
// what sbx's default policy gives the program, the least way: the image as the lower layer of
// an overlay root on a tmpfs, the image's /usr bound read-only over it, a tmpfs workspace and
// /tmp, a fresh /proc with the same entries masked, a /dev of six host devices, devpts and a
// tmpfs /dev/shm, pivot_root and the old root detached, the hostname, loopback up, a cgroup
// namespace once the cgroups hold the child. The program, forked by the child, drops every
// capability, sets no_new_privs and installs sbx's default seccomp filter (the same BPF program,
// as the build generated it), then runs in /workspace with sbx's default environment, not ours
// (which also keeps the image's matplotlib cache in use, as in sbx). No init that reports, no
// output capture, no checks of the image or the policy, no rlimits, no run result: what is left
// between this and sbx is sbx's own work, not the kernel's.
//
// It runs none of sbx's code on purpose: a floor that shared sbx's code would share its costs.
// The limits are sbx's defaults (512 MiB, 256 pids, one cpu). Exit status: the program's, or
// 125 when a step of its own fails (named on stderr).
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
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
volatile pid_t g_child = -1;
volatile sig_atomic_t g_stop = 0;

// SIGTERM, SIGINT or SIGHUP (sbx_bench's timeout sends SIGTERM before SIGKILL) kills the child,
// so the normal way out, which removes the cgroups, follows. Only async-signal-safe calls.
void OnStopSignal(int) {
  g_stop = 1;
  if (g_child > 0) ::kill(g_child, SIGKILL);
}

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

// sbx's default seccomp filter, as the build compiled it from sbx's rule table.
#include "seccomp_prebuilt.inc"

// In the child (pid 1 of the new namespaces) a failed step ends it alone; the parent reaps it
// and removes the cgroups.
[[noreturn]] void ChildFail(const char* what) {
  std::fprintf(stderr, "sbx_namespace_floor: %s: %s\n", what, std::strerror(errno));
  ::_exit(125);
}

void Mount(const char* source, const char* target, const char* type, unsigned long flags,
           const char* options = nullptr) {
  if (::mount(source, target, type, flags, options) != 0) ChildFail(target);
}

// A bind remount in a user namespace must keep the flags the kernel locked on the mount.
void BindRemount(const char* path, unsigned long extra) {
  struct statvfs st {};
  if (::statvfs(path, &st) != 0) ChildFail(path);
  unsigned long flags = MS_BIND | MS_REMOUNT | extra;
  const std::pair<unsigned long, unsigned long> locked[] = {
      {ST_NOSUID, MS_NOSUID}, {ST_NODEV, MS_NODEV},         {ST_NOEXEC, MS_NOEXEC}, {ST_NOATIME, MS_NOATIME},
      {ST_NODIRATIME, MS_NODIRATIME}, {ST_RELATIME, MS_RELATIME}, {ST_RDONLY, MS_RDONLY}};
  for (const auto& [st_flag, ms_flag] : locked) {
    if (st.f_flag & st_flag) flags |= ms_flag;
  }
  Mount(nullptr, path, nullptr, flags);
}

void Touch(const char* path) {
  int fd = ::open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) ChildFail(path);
  ::close(fd);
}

// The mounts of sbx's default root (sandbox/fs/mounts.cc), then pivot_root into it.
void BuildRoot(const std::string& image) {
  constexpr unsigned long kSafe = MS_NOSUID | MS_NODEV;
  Mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE);
  // Opened in this mount namespace (overlayfs takes no lower layer from another one) and
  // reached through the descriptor from here on: the scratch tmpfs covers the image's path.
  const int image_fd = ::open(image.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (image_fd < 0) ChildFail(image.c_str());
  // Over the image's own directory (never "/", which main refuses): a path lookup crosses into
  // a mount made on top of it, which it would not for the process's root.
  Mount("tmpfs", image.c_str(), "tmpfs", kSafe | MS_NOEXEC, "size=1073741824,mode=0700");
  if (::chdir(image.c_str()) != 0) ChildFail("chdir(scratch)");
  for (const char* dir : {"upper", "work", "root"}) {
    if (::mkdir(dir, 0755) != 0) ChildFail(dir);
  }
  const std::string lower = "/proc/self/fd/" + std::to_string(image_fd);
  const std::string overlay = "lowerdir=" + lower + ",upperdir=upper,workdir=work";
  Mount("overlay", "root", "overlay", kSafe, overlay.c_str());
  Mount((lower + "/usr").c_str(), "root/usr", nullptr, MS_BIND | MS_REC);
  BindRemount("root/usr", MS_RDONLY | kSafe);
  Mount("tmpfs", "root/workspace", "tmpfs", kSafe, "size=536870912,mode=0700,uid=1000,gid=1000");
  Mount("proc", "root/proc", "proc", kSafe | MS_NOEXEC);
  // runc's and bubblewrap's lists, as sbx masks them.
  for (const char* file : {"kcore", "keys", "key-users", "timer_list", "sysrq-trigger", "latency_stats",
                           "sched_debug", "kallsyms", "kpagecount", "kpageflags", "kpagecgroup",
                           "config.gz", "vmallocinfo", "slabinfo", "pagetypeinfo", "buddyinfo"}) {
    const std::string path = std::string("root/proc/") + file;
    if (::access(path.c_str(), F_OK) == 0) Mount("/dev/null", path.c_str(), nullptr, MS_BIND);
  }
  for (const char* dir : {"acpi", "asound", "scsi", "tty/driver"}) {
    const std::string path = std::string("root/proc/") + dir;
    if (::access(path.c_str(), F_OK) == 0)
      Mount("tmpfs", path.c_str(), "tmpfs", MS_RDONLY | kSafe | MS_NOEXEC, "size=4k,mode=0555");
  }
  for (const char* dir : {"sys", "bus", "fs", "irq"}) {
    const std::string path = std::string("root/proc/") + dir;
    if (::access(path.c_str(), F_OK) != 0) continue;
    Mount(path.c_str(), path.c_str(), nullptr, MS_BIND | MS_REC);
    BindRemount(path.c_str(), MS_RDONLY | kSafe | MS_NOEXEC);
  }
  Mount("tmpfs", "root/dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "size=64k,mode=0755");
  for (const char* device : {"null", "zero", "full", "random", "urandom", "tty"}) {
    const std::string target = std::string("root/dev/") + device;
    Touch(target.c_str());
    Mount((std::string("/dev/") + device).c_str(), target.c_str(), nullptr, MS_BIND);
  }
  if (::mkdir("root/dev/pts", 0755) != 0) ChildFail("root/dev/pts");
  Mount("devpts", "root/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620");
  if (::mkdir("root/dev/shm", 01777) != 0) ChildFail("root/dev/shm");
  Mount("tmpfs", "root/dev/shm", "tmpfs", kSafe, "size=536870912,mode=1777");
  for (const auto& [target, link] : {std::pair{"pts/ptmx", "root/dev/ptmx"}, {"/proc/self/fd", "root/dev/fd"},
                                     {"/proc/self/fd/0", "root/dev/stdin"}, {"/proc/self/fd/1", "root/dev/stdout"},
                                     {"/proc/self/fd/2", "root/dev/stderr"}}) {
    if (::symlink(target, link) != 0) ChildFail(link);
  }
  BindRemount("root/dev", MS_RDONLY | MS_NOSUID | MS_NOEXEC);
  Mount("tmpfs", "root/tmp", "tmpfs", kSafe, "size=536870912,mode=1777");
  if (::chdir("root") != 0 || ::syscall(SYS_pivot_root, ".", ".") != 0 || ::umount2(".", MNT_DETACH) != 0 ||
      ::chdir("/") != 0)
    ChildFail("pivot_root");
  if (::sethostname("sandbox", 7) != 0) ChildFail("sethostname");
  int sock = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  struct ifreq lo {};
  std::strcpy(lo.ifr_name, "lo");
  if (sock < 0 || ::ioctl(sock, SIOCGIFFLAGS, &lo) != 0) ChildFail("loopback");
  lo.ifr_flags |= IFF_UP;
  if (::ioctl(sock, SIOCSIFFLAGS, &lo) != 0) ChildFail("loopback up");
  ::close(sock);
}

// The program's side: no capabilities (bounding set, effective, permitted, inheritable), no
// new privileges, the filter; then its execve in /workspace with sbx's default environment
// (sandbox/launch/environment.cc: the image's matplotlib cache among it), none of ours.
[[noreturn]] void ExecConfined(char** argv) {
  static char home[] = "HOME=/workspace", lang[] = "LANG=C.UTF-8", logname[] = "LOGNAME=sandbox",
              backend[] = "MPLBACKEND=Agg", mplconfig[] = "MPLCONFIGDIR=/etc/matplotlib-cache",
              path[] = "PATH=/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin",
              unbuffered[] = "PYTHONUNBUFFERED=1", tmpdir[] = "TMPDIR=/tmp", user[] = "USER=sandbox";
  static char* sandbox_env[] = {home, lang, logname, backend, mplconfig, path, unbuffered, tmpdir, user, nullptr};
  if (::chdir("/workspace") != 0) ChildFail("chdir(/workspace)");
  for (int cap = 0; cap <= CAP_LAST_CAP; ++cap) {
    // EINVAL: a capability this kernel does not have, only the headers do.
    if (::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno != EINVAL) ChildFail("PR_CAPBSET_DROP");
  }
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (::syscall(SYS_capset, &header, data) != 0) ChildFail("capset");
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) ChildFail("PR_SET_NO_NEW_PRIVS");
  sock_fprog filter{static_cast<unsigned short>(std::size(kPrebuiltDefaultFilter)),
                    const_cast<sock_filter*>(kPrebuiltDefaultFilter)};
  if (::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &filter) != 0) ChildFail("seccomp");
  environ = sandbox_env;  // execvp searches the new PATH and passes this environment on
  ::execvp(argv[0], argv);
  ::_exit(127);
}

// The scratch tmpfs goes over the image's path, which must not be the root itself.
bool IsHostRoot(const std::string& path) {
  struct stat dir {}, host_root {};
  return ::stat(path.c_str(), &dir) == 0 && ::stat("/", &host_root) == 0 && dir.st_dev == host_root.st_dev &&
         dir.st_ino == host_root.st_ino;
}

}  // namespace

int main(int argc, char** argv) {
  struct sigaction stop {};
  stop.sa_handler = OnStopSignal;
  for (int signal : {SIGTERM, SIGINT, SIGHUP}) ::sigaction(signal, &stop, nullptr);
  std::string limits = "none", root;
  bool with_root = false;
  int first = 1;
  for (; first + 1 < argc; first += 2) {
    if (std::strcmp(argv[first], "--limits") == 0) {
      limits = argv[first + 1];
    } else if (std::strcmp(argv[first], "--root") == 0) {
      root = argv[first + 1];
      with_root = true;
    } else {
      break;
    }
  }
  const bool flag_left = first < argc && std::strncmp(argv[first], "--", 2) == 0;
  if (flag_left && std::strcmp(argv[first], "--") == 0) ++first;
  else if (flag_left) first = argc;  // a flag without its value, or an unknown one
  if (first >= argc || (limits != "none" && limits != "auto" && limits != "v1" && limits != "v2") ||
      (with_root && (root.empty() || root.front() != '/' || IsHostRoot(root)))) {
    std::fputs("usage: sbx_namespace_floor [--limits none|auto|v1|v2] [--root /IMAGE_DIR] -- PROGRAM [ARG...]\n",
               stderr);
    return 125;
  }
  MakeCgroups(limits);
  int cgroup_fd = -1;
  if (limits == "v2" && (cgroup_fd = ::open(g_cgroups[0].c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
    Fail("open(" + g_cgroups[0] + ")");

  // With a root of its own the child gets the new mount namespace, so that pivot_root moves its
  // root and not this process's, which still reaches the cgroups to remove them.
  const std::string uid = std::to_string(::geteuid()), gid = std::to_string(::getegid());
  const bool mount_ns_here = !with_root;
  if (::unshare(CLONE_NEWUSER | (mount_ns_here ? CLONE_NEWNS : 0) | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC |
                CLONE_NEWUTS) != 0)
    Fail("unshare");
  WriteFile("/proc/self/setgroups", "deny");
  WriteFile("/proc/self/uid_map", "1000 " + uid + " 1");
  WriteFile("/proc/self/gid_map", "1000 " + gid + " 1");
  if (mount_ns_here && ::mount("none", "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
    Fail("mount(/, MS_PRIVATE)");

  // v1: the child waits until it has been moved into the cgroups, so the program runs limited.
  int go[2];
  if (::pipe2(go, O_CLOEXEC) != 0) Fail("pipe2");
  struct clone_args args {};
  args.exit_signal = SIGCHLD;
  if (with_root) args.flags |= CLONE_NEWNS;
  if (cgroup_fd >= 0) {
    args.flags |= CLONE_INTO_CGROUP;
    args.cgroup = static_cast<uint64_t>(cgroup_fd);
  }
  const pid_t child = static_cast<pid_t>(::syscall(SYS_clone3, &args, sizeof(args)));
  if (child < 0) Fail("clone3");
  if (child > 0) {
    g_child = child;
    if (g_stop) ::kill(child, SIGKILL);  // a stop signal came before there was a child to kill
  }
  if (child == 0) {
    char byte;
    ::close(go[1]);
    if (!with_root) {
      if (::read(go[0], &byte, 1) != 1) ::_exit(125);
      ::execvp(argv[first], argv + first);
      ::_exit(127);
    }
    // Like sbx's child: the root is built while the parent places it in the cgroups.
    BuildRoot(root);
    if (::read(go[0], &byte, 1) != 1) ::_exit(125);
    if (::unshare(CLONE_NEWCGROUP) != 0) ChildFail("unshare(CLONE_NEWCGROUP)");
    const pid_t program = ::fork();
    if (program < 0) ChildFail("fork");
    if (program == 0) ExecConfined(argv + first);
    int status = 0;
    while (::waitpid(program, &status, 0) < 0 && errno == EINTR) {
    }
    ::_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
  }
  ::close(go[0]);
  // A child that failed while building its root has closed its end: its status says why.
  ::signal(SIGPIPE, SIG_IGN);
  if (limits == "v1") {
    for (const std::string& dir : g_cgroups) WriteFile(dir + "/cgroup.procs", std::to_string(child));
  }
  if (::write(go[1], "g", 1) != 1 && errno != EPIPE) Fail("write(go)");
  ::close(go[1]);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  RemoveCgroups();
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
