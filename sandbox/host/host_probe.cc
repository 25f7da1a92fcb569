// Host feature probes, each in a throwaway child process.
#include "sandbox/host/host_probe.h"

#include <fcntl.h>
#include <linux/close_range.h>
#include <linux/landlock.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <iterator>

#include "base/small_file.h"
#include "sandbox/cgroup/cgroup.h"
#include "sandbox/host/blocker_hints.h"
#include "sandbox/image/image.h"
#include "sandbox/launch/child_wait.h"
#include "sandbox/net/network_redirect.h"

namespace sbx {
namespace {

// Runs `probe` in a forked child; true when it returns 0.
bool InChild(const std::function<int()>& probe) {
  pid_t pid = ::fork();
  if (pid < 0) return false;
  if (pid == 0) ::_exit(probe());
  int status = 0;
  if (WaitForChild(pid, &status) != pid) return false;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

std::string ReadFirstLine(const char* path) {
  auto text = ReadSmallFile(path, 4096);
  return text ? text->substr(0, text->find('\n')) : std::string();
}

bool WriteFile(const char* path, const char* text) {
  int fd = ::open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = ::write(fd, text, std::char_traits<char>::length(text)) >= 0;
  ::close(fd);
  return ok;
}

// In a child: a user namespace with our uid mapped, then a mount namespace.
int EnterUserAndMountNamespace() {
  uid_t uid = ::geteuid();
  gid_t gid = ::getegid();
  if (::unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) return 1;  // the steps: kProbeSteps
  char map[64];
  std::snprintf(map, sizeof(map), "0 %u 1", uid);
  if (!WriteFile("/proc/self/setgroups", "deny") || !WriteFile("/proc/self/uid_map", map)) return 2;
  std::snprintf(map, sizeof(map), "0 %u 1", gid);
  if (!WriteFile("/proc/self/gid_map", map)) return 3;
  return ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0 ? 0 : 4;
}

// The steps of the probes below, as EnterUserAndMountNamespace and each probe number them.
constexpr const char* kProbeSteps[] = {
    "",
    "unshare(CLONE_NEWUSER|CLONE_NEWNS)",
    "write /proc/self/uid_map",
    "write /proc/self/gid_map",
    "mount(/, MS_REC|MS_PRIVATE)",
    "mount a tmpfs",  // on the scratch directory, named by the caller
    "mount an overlay",
    "unshare(CLONE_NEWPID)",
    "mount a fresh proc",
    "unshare(CLONE_NEWUTS)",
    "sethostname in the new uts namespace",
};
constexpr int kStepUnshare = 1, kStepPrivate = 4, kStepTmpfs = 5, kStepOverlay = 6;
constexpr int kStepPidNs = 7, kStepProc = 8, kStepUtsNs = 9, kStepHostname = 10;

// Runs `probe` (returning 0 or the number of the failed step, with errno set) in a forked
// child; the child sends the step and errno back over a pipe.
ProbeStep RunProbeStep(const std::function<int()>& probe) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return {-1, errno};
  pid_t pid = ::fork();
  if (pid < 0) {
    const int err = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    return {-1, err};
  }
  if (pid == 0) {
    ::close(fds[0]);
    errno = 0;
    const int outcome[2] = {probe(), errno};
    (void)!::write(fds[1], outcome, sizeof(outcome));
    ::_exit(0);
  }
  ::close(fds[1]);
  int outcome[2] = {-1, EIO};
  ssize_t n;
  do {
    n = ::read(fds[0], outcome, sizeof(outcome));
  } while (n < 0 && errno == EINTR);
  ::close(fds[0]);
  int status = 0;
  (void)WaitForChild(pid, &status);
  if (n != sizeof(outcome)) return {-1, EIO};
  return {outcome[0], outcome[0] == 0 ? 0 : outcome[1]};
}

}  // namespace

bool CanCreateUserNamespace() {
  return InChild([] { return ::unshare(CLONE_NEWUSER) == 0 ? 0 : 1; });
}

ProbeStep ProbeOverlayInUserNamespace(const std::string& scratch_dir) {
  // Formatted before the fork: the child does not allocate.
  const std::string options = "lowerdir=" + scratch_dir + "/l,upperdir=" + scratch_dir +
                              "/u,workdir=" + scratch_dir + "/w";
  return RunProbeStep([&scratch_dir, &options] {
    if (int step = EnterUserAndMountNamespace()) return step;
    const char* dir = scratch_dir.c_str();
    if (::mount("tmpfs", dir, "tmpfs", 0, "size=1m") != 0 || ::chdir(dir) != 0) return kStepTmpfs;
    for (const char* sub : {"l", "u", "w", "m"}) ::mkdir(sub, 0755);
    return ::mount("overlay", "m", "overlay", 0, options.c_str()) == 0 ? 0 : kStepOverlay;
  });
}

ProbeStep ProbeFreshProc() {
  return RunProbeStep([] {
    if (int step = EnterUserAndMountNamespace()) return step;
    if (::unshare(CLONE_NEWPID) != 0) return kStepPidNs;
    // The first child is the new namespace's init; a procfs mounted over /proc here stays in
    // this private mount namespace.
    pid_t init = ::fork();
    if (init < 0) return kStepPidNs;
    if (init == 0) {
      ::_exit(::mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) == 0
                  ? 0
                  : errno);
    }
    int status = 0;
    if (WaitForChild(init, &status) != init || !WIFEXITED(status)) return kStepPidNs;
    errno = WEXITSTATUS(status);
    return errno == 0 ? 0 : kStepProc;
  });
}

ProbeStep ProbeHostnameInUtsNamespace() {
  return RunProbeStep([] {
    if (int step = EnterUserAndMountNamespace()) return step;
    if (::unshare(CLONE_NEWUTS) != 0) return kStepUtsNs;
    return ::sethostname("sbx", 3) == 0 ? 0 : kStepHostname;
  });
}

std::string DescribeProbeStep(const ProbeStep& outcome) {
  if (outcome.failed_step == 0) return "";
  if (outcome.failed_step < 0 || outcome.failed_step >= static_cast<int>(std::size(kProbeSteps)))
    return std::string("the probe could not run: ") + std::strerror(outcome.err);
  return std::string(kProbeSteps[outcome.failed_step]) + ": " + std::strerror(outcome.err);
}

std::string ScratchDirectoryForProbes() {
  // The launcher covers the image's parent, the cache directory; before any image exists,
  // /tmp stands in.
  auto cache = ImageCacheDir();
  struct stat st {};
  if (cache && ::stat(cache->c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return *cache;
  return "/tmp";
}

std::string ProbeStepHint(const ProbeStep& outcome) {
  switch (outcome.failed_step) {
    case kStepUnshare:
    case kStepPidNs: return NamespaceDeniedHint(outcome.err);
    case kStepPrivate:
    case kStepTmpfs:
      if (outcome.err == ENOENT) return "the directory is missing; create it";
      return MountDeniedHint(outcome.err);
    case kStepOverlay:
      return outcome.err == EPERM || outcome.err == EACCES
                 ? MountDeniedHint(outcome.err)
                 : "needs Linux >= 5.11 with overlayfs (overlay in a user namespace)";
    case kStepProc: return FreshProcDeniedHint(outcome.err);
    case kStepUtsNs: return NamespaceDeniedHint(outcome.err);
    case kStepHostname: return SetupFailureHint(ChildStep::kHostname, outcome.err);
    default: return "";
  }
}

bool CanMountOverlayInUserNamespace() {
  return ProbeOverlayInUserNamespace(ScratchDirectoryForProbes()).failed_step == 0;
}

bool CanRedirectAllPortsInNetworkNamespace() {
  // The batch a sandbox child sends on a kernel with IPv6 (one without gets the IPv4 half),
  // built here: the probe's child only sends it.
  const int probe = ::socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  const bool with_ipv6 = probe >= 0;
  if (probe >= 0) ::close(probe);
  const RedirectBatches batches = BuildRedirectBatches(with_ipv6, kRedirectCapturePort);
  return InChild([&batches] {
    if (int err = EnterUserAndMountNamespace()) return err;
    if (::unshare(CLONE_NEWNET) != 0) return 5;
    return InstallRedirect(batches).err == 0 ? 0 : 6;
  });
}

std::vector<FeatureProbe> ProbeHost() {
  std::vector<FeatureProbe> probes;
  auto add = [&probes](std::string name, bool available, bool required, std::string detail) {
    probes.push_back({std::move(name), available, required, std::move(detail)});
  };
  // A required probe run step by step: on failure, the step, its errno and the blocker's fix.
  auto add_step = [&add](std::string name, const ProbeStep& outcome, std::string works) {
    if (outcome.failed_step == 0) return add(std::move(name), true, true, std::move(works));
    std::string hint = ProbeStepHint(outcome);
    add(std::move(name), false, true,
        DescribeProbeStep(outcome) + (hint.empty() ? "" : ": " + hint));
  };
  const ProbeStep userns_step = RunProbeStep([] { return ::unshare(CLONE_NEWUSER) == 0 ? 0 : 1; });
  const bool userns = userns_step.failed_step == 0;
  std::string userns_hint = NamespaceDeniedHint(userns_step.err);
  add("user_namespaces", userns, true,
      userns ? "unshare(CLONE_NEWUSER) works"
             : "unshare(CLONE_NEWUSER): " + std::string(std::strerror(userns_step.err)) + ": " +
                   (userns_hint.empty() ? "check user.max_user_namespaces and "
                                          "kernel.unprivileged_userns_clone"
                                        : userns_hint));
  std::string unpriv = ReadFirstLine("/proc/sys/kernel/unprivileged_userns_clone");
  add("unprivileged_user_namespaces", unpriv.empty() || unpriv == "1", false,
      unpriv.empty() ? "no kernel.unprivileged_userns_clone switch (allowed)"
                     : "kernel.unprivileged_userns_clone = " + unpriv + " (needed for rootless mode)");
  const std::string scratch = ScratchDirectoryForProbes();
  add_step("overlay_in_user_namespace", ProbeOverlayInUserNamespace(scratch),
           "overlay mounts inside a user namespace (scratch tmpfs on " + scratch + ")");
  add_step("fresh_proc", ProbeFreshProc(), "a new pid namespace gets its own /proc");
  add_step("hostname", ProbeHostnameInUtsNamespace(), "sethostname in a new uts namespace");
  for (auto [name, flag] : {std::pair{"pid_namespace", CLONE_NEWPID}, std::pair{"net_namespace", CLONE_NEWNET},
                            std::pair{"ipc_namespace", CLONE_NEWIPC}, std::pair{"uts_namespace", CLONE_NEWUTS},
                            std::pair{"cgroup_namespace", CLONE_NEWCGROUP}}) {
    int ns_flag = flag;
    bool ok = InChild([ns_flag] { return EnterUserAndMountNamespace() == 0 && ::unshare(ns_flag) == 0 ? 0 : 1; });
    add(name, ok, true, ok ? "works inside a user namespace" : "unshare failed inside a user namespace");
  }
  bool seccomp = ::prctl(PR_GET_SECCOMP, 0, 0, 0, 0) >= 0;
  add("seccomp", seccomp, true, seccomp ? "seccomp filters available" : "prctl(PR_GET_SECCOMP) failed");
  std::string cgroups = DescribeCgroupSupport();
  add("cgroups", cgroups.rfind("none", 0) != 0, false, cgroups);
  errno = 0;
  long clone3 = ::syscall(SYS_clone3, nullptr, 0);
  add("clone3", !(clone3 < 0 && errno == ENOSYS), false, "CLONE_INTO_CGROUP start without a migration");
  bool redirect = CanRedirectAllPortsInNetworkNamespace();
  add("nftables_redirect", redirect, false,
      redirect ? "nf_tables NAT in a network namespace: an allowlist captures and logs every TCP port"
               : "no nf_tables NAT in a network namespace: an allowlist captures listed and "
                 "audit-only ports only, and refuses rules with a `*` port");
  int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, ::getpid(), 0));
  add("pidfd", pidfd >= 0, true, "signals go through pidfds, never raw pids");
  if (pidfd >= 0) ::close(pidfd);
  errno = 0;
  ::syscall(SYS_close_range, ~0U, 0U, 0);  // invalid range: EINVAL when the call exists
  add("close_range", errno != ENOSYS, true, "marks inherited fds close-on-exec");
  long abi = ::syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  add("landlock", abi > 0, false, abi > 0 ? "ABI " + std::to_string(abi) + " (not used yet)" : "not available");
  return probes;
}

}  // namespace sbx
