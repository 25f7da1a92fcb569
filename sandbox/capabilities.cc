// Prepares the empty capability state in the parent and applies it in the child.
#include "sandbox/capabilities.h"

#include <sys/prctl.h>

#include <cerrno>

namespace sbx {

Result<CapabilityPlan> PrepareCapabilitiesInParent() {
  CapabilityPlan plan;
  cap_t empty = cap_init();
  if (empty == nullptr) return SysError(ErrorCode::kSetupFailed, "cap_init");
  plan.empty = std::shared_ptr<struct _cap_struct>(empty, [](cap_t caps) { cap_free(caps); });
  plan.last_cap = static_cast<int>(cap_max_bits()) - 1;
  return plan;
}

int DropBoundingAndAmbientInChild(const CapabilityPlan& plan) {
  for (int cap = 0; cap <= plan.last_cap; ++cap) {
    if (::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno != EINVAL) return errno;
  }
  if (::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL)
    return errno;
  return 0;
}

int ClearCapabilitiesInChild(const CapabilityPlan& plan) {
  return cap_set_proc(plan.empty.get()) == 0 ? 0 : errno;
}

}  // namespace sbx
