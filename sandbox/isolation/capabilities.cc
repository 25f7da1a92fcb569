// Applies the empty capability state in the child (the parent's side: capability_plan.cc).
#include "sandbox/isolation/capabilities.h"

#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace sbx {

int DropBoundingAndAmbientInChild(const CapabilityPlan& plan) {
  for (int cap = 0; cap <= plan.last_cap; ++cap) {
    if (::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno != EINVAL) return errno;
  }
  if (::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL)
    return errno;
  return 0;
}

int ClearCapabilitiesInChild() {
  // capset(2) directly with all sets empty: the child must not depend on what libcap's
  // cap_set_proc may do internally (locks, psx thread broadcasting).
  struct __user_cap_header_struct header {_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
  return ::syscall(SYS_capset, &header, data) == 0 ? 0 : errno;
}

int KeepOnlyKillCapabilityInChild() {
  struct __user_cap_header_struct header {_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
  data[0].effective = data[0].permitted = 1u << CAP_KILL;
  return ::syscall(SYS_capset, &header, data) == 0 ? 0 : errno;
}

}  // namespace sbx
