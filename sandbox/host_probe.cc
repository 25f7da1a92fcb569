// Host feature probes, each in a throwaway child process.
#include "sandbox/host_probe.h"

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
#include <fstream>
#include <functional>

#include "sandbox/cgroup.h"
#include "sandbox/child_wait.h"
#include "sandbox/network_redirect.h"

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
  std::ifstream file(path);
  std::string line;
  std::getline(file, line);
  return line;
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
  if (::unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) return 1;
  char map[64];
  std::snprintf(map, sizeof(map), "0 %u 1", uid);
  if (!WriteFile("/proc/self/setgroups", "deny") || !WriteFile("/proc/self/uid_map", map)) return 2;
  std::snprintf(map, sizeof(map), "0 %u 1", gid);
  if (!WriteFile("/proc/self/gid_map", map)) return 3;
  return ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0 ? 0 : 4;
}

}  // namespace

bool CanCreateUserNamespace() {
  return InChild([] { return ::unshare(CLONE_NEWUSER) == 0 ? 0 : 1; });
}

bool CanMountOverlayInUserNamespace() {
  return InChild([] {
    if (int err = EnterUserAndMountNamespace()) return err;
    if (::mount("tmpfs", "/tmp", "tmpfs", 0, "size=1m") != 0) return 5;
    for (const char* dir : {"/tmp/l", "/tmp/u", "/tmp/w", "/tmp/m"}) ::mkdir(dir, 0755);
    return ::mount("overlay", "/tmp/m", "overlay", 0, "lowerdir=/tmp/l,upperdir=/tmp/u,workdir=/tmp/w") == 0 ? 0 : 6;
  });
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
  bool userns = CanCreateUserNamespace();
  add("user_namespaces", userns, true,
      userns ? "unshare(CLONE_NEWUSER) works"
             : "unshare(CLONE_NEWUSER) failed; check user.max_user_namespaces and "
               "kernel.unprivileged_userns_clone / AppArmor's restrict_unprivileged_userns");
  std::string unpriv = ReadFirstLine("/proc/sys/kernel/unprivileged_userns_clone");
  add("unprivileged_user_namespaces", unpriv.empty() || unpriv == "1", false,
      unpriv.empty() ? "no kernel.unprivileged_userns_clone switch (allowed)"
                     : "kernel.unprivileged_userns_clone = " + unpriv + " (needed for rootless mode)");
  bool overlay = CanMountOverlayInUserNamespace();
  add("overlay_in_user_namespace", overlay, true,
      overlay ? "overlay mounts inside a user namespace" : "needs Linux >= 5.11 with overlayfs");
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
