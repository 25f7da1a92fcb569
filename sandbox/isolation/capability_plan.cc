// The parent's side of the capability drop: libcap tells the kernel's highest capability.
#include "sandbox/isolation/capabilities.h"

namespace sbx {

Result<CapabilityPlan> PrepareCapabilitiesInParent() {
  CapabilityPlan plan;
  plan.last_cap = static_cast<int>(cap_max_bits()) - 1;
  return plan;
}

}  // namespace sbx
