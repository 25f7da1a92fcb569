// Names of child setup steps and the async-signal-safe report writer.
#include "sandbox/launch/child_report.h"

#include <unistd.h>

#include <cerrno>

namespace sbx {

const char* ChildStepName(ChildStep step) {
  switch (step) {
    case ChildStep::kWaitForParent: return "wait for the parent (id maps, cgroup)";
    case ChildStep::kPersonality: return "reduce the inherited personality to its execution domain";
    case ChildStep::kOomScore: return "raise the inherited negative OOM score adjustment to 0";
    case ChildStep::kOpenSources: return "re-open the image and the workspace in the sandbox's mount namespace";
    case ChildStep::kSetupIds: return "take the setup ids (the namespace's root, or 1000 rootless)";
    case ChildStep::kMountPrivate: return "make mounts private";
    case ChildStep::kMountScratch: return "mount the scratch tmpfs (limits.rootfs_size)";
    case ChildStep::kMountImage: return "bind the image";
    case ChildStep::kMountOverlay: return "mount the overlay root";
    case ChildStep::kSessionLibrary: return "bind the pooled sessions' library (zygote)";
    case ChildStep::kResolvConf: return "bind /etc/resolv.conf (network allowlist)";
    case ChildStep::kCaBundle: return "bind the CA bundle over /etc/ssl/certs/ca-certificates.crt (network allowlist)";
    case ChildStep::kMountWorkspace: return "bind the workspace at /workspace";
    case ChildStep::kMountProc: return "mount /proc";
    case ChildStep::kMaskProc: return "mask /proc entries";
    case ChildStep::kMountDev: return "build /dev";
    case ChildStep::kMountTmp: return "mount /tmp";
    case ChildStep::kPivotRoot: return "pivot_root into the overlay";
    case ChildStep::kHostname: return "set the hostname";
    case ChildStep::kLoopback: return "bring up lo";
    case ChildStep::kNetworkRoutes: return "route every destination to the capture sockets (network allowlist)";
    case ChildStep::kNetworkRedirect: return "redirect every TCP port to the capture socket with nf_tables NAT (network allowlist; a policy with a `*` port needs it: the kernel must have nf_tables, nat and conntrack)";
    case ChildStep::kNetworkCapture: return "bind and hand over the capture sockets (network allowlist)";
    case ChildStep::kCgroupNamespace: return "enter a cgroup namespace";
    case ChildStep::kInitSignals: return "set up the init's signal handling";
    case ChildStep::kSpawnProgram: return "spawn the program";
    case ChildStep::kSetsid: return "setsid";
    case ChildStep::kStdio: return "set up stdin/stdout/stderr";
    case ChildStep::kRlimits: return "set rlimits";
    case ChildStep::kDropCapabilities: return "drop capabilities";
    case ChildStep::kSetIds: return "switch to uid/gid 1000";
    case ChildStep::kNoNewPrivs: return "set no_new_privs";
    case ChildStep::kChdirWorkspace: return "chdir to /workspace";
    case ChildStep::kCloseFds: return "close inherited descriptors";
    case ChildStep::kSeccomp: return "install the seccomp filter";
    case ChildStep::kExec: return "execve";
  }
  return "unknown step";
}

uint64_t CpuMicroseconds(const struct rusage& usage) {
  auto micros = [](const struct timeval& time) {
    return static_cast<uint64_t>(time.tv_sec) * 1000000u + static_cast<uint64_t>(time.tv_usec);
  };
  return micros(usage.ru_utime) + micros(usage.ru_stime);
}

void SendChildReport(int fd, ReportKind kind, ChildStep step, int err_no, int value) {
  SendChildReport(fd, ChildReport{kind, step, err_no, value, 0, 0, 0});
}

void SendChildReport(int fd, const ChildReport& report) {
  ssize_t n;
  do {
    n = ::write(fd, &report, sizeof(report));
  } while (n < 0 && errno == EINTR);
}

}  // namespace sbx
