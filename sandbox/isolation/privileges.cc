// Drops capabilities, ids and the right to gain privileges, in the order the kernel needs.
#include "sandbox/isolation/privileges.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include "sandbox/isolation/userns.h"

namespace sbx {

int SetIdsInChild(uint32_t id, bool drop_groups) {
  if (drop_groups && ::syscall(SYS_setgroups, 0, nullptr) != 0) return errno;
  if (::syscall(SYS_setresgid, id, id, id) != 0) return errno;
  if (::syscall(SYS_setresuid, id, id, id) != 0) return errno;
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) return errno;
  return 0;
}

int DropPrivilegesInChild(const CapabilityPlan& capabilities, bool drop_groups, ChildStep* failed_step) {
  // The bounding set needs CAP_SETPCAP, gone once the ids change: first.
  if (int err = DropBoundingAndAmbientInChild(capabilities)) {
    *failed_step = ChildStep::kDropCapabilities;
    return err;
  }
  return DropIdsAndCapabilitiesInChild(drop_groups, failed_step);
}

int DropIdsAndCapabilitiesInChild(bool drop_groups, ChildStep* failed_step) {
  if (int err = SetIdsInChild(kSandboxId, drop_groups)) {
    *failed_step = ChildStep::kSetIds;
    return err;
  }
  if (int err = ClearCapabilitiesInChild()) {
    *failed_step = ChildStep::kDropCapabilities;
    return err;
  }
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    *failed_step = ChildStep::kNoNewPrivs;
    return errno;
  }
  return 0;
}

}  // namespace sbx
