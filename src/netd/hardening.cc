// Applies hardening.h's steps to the running sbx-netd.
#include "src/netd/hardening.h"

#include <grp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>

#include "sandbox/isolation/capabilities.h"
#include "src/netd/netd_seccomp.h"

namespace sbx::netd {
namespace {

Result<void> DieWithParent(pid_t runner) {
  if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) {
    return SysError(ErrorCode::kSetupFailed, "prctl(PR_SET_PDEATHSIG)");
  }
  // The runner died before the line above: we were reparented and no signal will come.
  if (getppid() != runner) return MakeError(ErrorCode::kSetupFailed, "the runner is gone");
  return Ok{};
}

Result<void> LimitOpenFiles() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return SysError(ErrorCode::kSetupFailed, "getrlimit");
  // Lowering is always allowed; raising the hard limit needs privilege we may not have.
  rlimit wanted{kNetdNoFileLimit, kNetdNoFileLimit};
  if (setrlimit(RLIMIT_NOFILE, &wanted) == 0) return Ok{};
  const rlim_t most = std::min<rlim_t>(limit.rlim_max, kNetdNoFileLimit);
  wanted = {most, most};
  if (setrlimit(RLIMIT_NOFILE, &wanted) != 0) {
    return SysError(ErrorCode::kSetupFailed, "setrlimit(RLIMIT_NOFILE)");
  }
  return Ok{};
}

Result<void> DropPrivileges() {
  SBX_ASSIGN_OR_RETURN(auto plan, PrepareCapabilitiesInParent());
  if (geteuid() == 0) {
    if (int err = DropBoundingAndAmbientInChild(plan); err != 0) {
      return SysError(ErrorCode::kSetupFailed, "drop the capability bounding set", err);
    }
    if (setgroups(0, nullptr) != 0) return SysError(ErrorCode::kSetupFailed, "setgroups(0)");
    if (setresgid(kNetdUnprivilegedId, kNetdUnprivilegedId, kNetdUnprivilegedId) != 0) {
      return SysError(ErrorCode::kSetupFailed, "setresgid(65534)");
    }
    if (setresuid(kNetdUnprivilegedId, kNetdUnprivilegedId, kNetdUnprivilegedId) != 0) {
      return SysError(ErrorCode::kSetupFailed, "setresuid(65534)");
    }
  }
  if (int err = ClearCapabilitiesInChild(); err != 0) {
    return SysError(ErrorCode::kSetupFailed, "capset(empty)", err);
  }
  return Ok{};
}

}  // namespace

Result<void> HardenProcess() {
  // The runner set PR_SET_PDEATHSIG before execve and checked it was still our parent, so the
  // parent now is the runner (pid 1 too, when the runner is a container's init).
  const pid_t runner = getppid();
  SBX_TRY(DieWithParent(runner));
  SBX_TRY(LimitOpenFiles());
  SBX_TRY(DropPrivileges());
  SBX_TRY(DieWithParent(runner));
  if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) {
    return SysError(ErrorCode::kSetupFailed, "prctl(PR_SET_DUMPABLE)");
  }
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    return SysError(ErrorCode::kSetupFailed, "prctl(PR_SET_NO_NEW_PRIVS)");
  }
  // Compiled at build time: nothing to allocate or read here, and no libseccomp at run time.
  if (int err = InstallSeccompInChild(NetdSeccompProgram()); err != 0) {
    return SysError(ErrorCode::kSetupFailed, "seccomp(netd filter)", err);
  }
  return Ok{};
}

}  // namespace sbx::netd
