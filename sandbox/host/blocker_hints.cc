// Names the container-runtime blocker behind a failed sandbox step, with the fixes.
#include "sandbox/host/blocker_hints.h"

#include <cerrno>

#include "base/small_file.h"

namespace sbx {
namespace {

constexpr const char* kSeccompFix =
    "fix: podman/Docker `--security-opt seccomp=deploy/seccomp/sbx.json` (sbx's profile: the "
    "runtime's default plus namespaces and mounts); Kubernetes "
    "`securityContext.seccompProfile: {type: Localhost, localhostProfile: sbx.json}` with "
    "`hostUsers: false`";

std::string ReadMountinfo() {
  auto text = ReadSmallFile("/proc/self/mountinfo", 16 << 20);
  return text ? std::move(*text) : std::string();
}

}  // namespace

std::vector<std::string> ProcOvermounts(std::string_view mountinfo) {
  std::vector<std::string> paths;
  while (!mountinfo.empty()) {
    size_t end = mountinfo.find('\n');
    std::string_view line = mountinfo.substr(0, end);
    mountinfo.remove_prefix(end == std::string_view::npos ? mountinfo.size() : end + 1);
    // Fields: id parent major:minor root mount-point ...; the fifth is the mount point.
    size_t start = 0;
    for (int field = 0; field < 4 && start != std::string_view::npos; ++field) {
      start = line.find(' ', start);
      if (start != std::string_view::npos) ++start;
    }
    if (start == std::string_view::npos) continue;
    std::string_view point = line.substr(start, line.find(' ', start) - start);
    if (point.substr(0, 6) != "/proc/" || point == "/proc/sys/fs/binfmt_misc") continue;
    paths.emplace_back(point);
  }
  return paths;
}

std::string NamespaceDeniedHint(int err) {
  switch (err) {
    case EPERM:
    case EACCES:
      return std::string(
                 "the namespaces are denied: a container's seccomp profile (or "
                 "AppArmor's userns restriction) blocks unshare/clone with namespace "
                 "flags; ") +
             kSeccompFix + "; on Ubuntu >= 23.10 also an AppArmor profile granting `userns,`";
    case ENOSPC:
      return "no user namespaces left: user.max_user_namespaces is 0 or exhausted; raise it "
             "(sysctl user.max_user_namespaces=15000) on the host";
    case EINVAL:
    case ENOSYS:
      return "this kernel has no user namespaces (CONFIG_USER_NS); sbx needs them";
    default:
      return "";
  }
}

std::string MountDeniedHint(int err) {
  if (err != EPERM && err != EACCES) return "";
  return std::string(
             "mount(2) is denied inside the sandbox's own user namespace: the "
             "container's seccomp profile or an LSM (AppArmor's docker-default, "
             "SELinux's container_t) blocks it; ") +
         kSeccompFix +
         "; AppArmor: `--security-opt apparmor=unconfined` or a profile with `mount, umount, "
         "pivot_root,` (Kubernetes `appArmorProfile`); SELinux: `seLinuxOptions.type: spc_t`";
}

std::string FreshProcDeniedHint(int err) {
  if (err != EPERM) return "";
  const std::vector<std::string> masked = ProcOvermounts(ReadMountinfo());
  if (masked.empty()) {
    return "the kernel refused a fresh /proc for the sandbox's pid namespace although nothing "
           "is mounted over this /proc: check seccomp and LSM denials of mount(2)";
  }
  std::string list;
  for (size_t i = 0; i < masked.size() && i < 3; ++i) list += (i ? ", " : "") + masked[i];
  if (masked.size() > 3) list += ", ...";
  return "the container runtime masks /proc (" + std::to_string(masked.size()) +
         " paths mounted over: " + list +
         "), so the kernel refuses a fresh /proc for the "
         "sandbox's pid namespace; fix: podman `--security-opt unmask=/proc/*`, Docker "
         "`--security-opt systempaths=unconfined`, Kubernetes `securityContext.procMount: "
         "Unmasked` with `hostUsers: false` (sbx masks the same paths in its own /proc)";
}

std::string SetupFailureHint(ChildStep step, int err) {
  switch (step) {
    case ChildStep::kMountProc:
      return FreshProcDeniedHint(err);
    case ChildStep::kMountPrivate:
    case ChildStep::kMountScratch:
    case ChildStep::kMountImage:
    case ChildStep::kMountOverlay:
    case ChildStep::kMountWorkspace:
    case ChildStep::kMountDev:
    case ChildStep::kMountTmp:
    case ChildStep::kPivotRoot:
      return MountDeniedHint(err);
    case ChildStep::kCgroupNamespace:
      return NamespaceDeniedHint(err);
    case ChildStep::kHostname:
      if (err != EPERM) return "";
      return std::string(
                 "sethostname is denied in the sandbox's own uts namespace: the "
                 "container's seccomp profile allows it only with CAP_SYS_ADMIN "
                 "(podman's and Docker's defaults); ") +
             kSeccompFix;
    default:
      return "";
  }
}

}  // namespace sbx
