// Capabilities: the sandboxed program ends with all five sets empty.
//
// Usage: `auto caps = PrepareCapabilitiesInParent();` (libcap tells the kernel's highest
// capability) then, in the child while it still holds its namespace capabilities,
// `DropBoundingAndAmbientInChild(caps)` (needs CAP_SETPCAP), switch ids, then
// `ClearCapabilitiesInChild()` for the effective, permitted and inheritable sets.
#pragma once

#include <sys/capability.h>


#include "base/error.h"

namespace sbx {

struct CapabilityPlan {
  int last_cap = 0;                           // the kernel's highest capability number
};

Result<CapabilityPlan> PrepareCapabilitiesInParent();

// Async-signal-safe; return 0 or an errno.
int DropBoundingAndAmbientInChild(const CapabilityPlan& plan);
int ClearCapabilitiesInChild();
// The init of an outer-isolation run (uid 0, no user namespace): CAP_KILL alone in the
// effective and permitted sets, so it can kill the program's tree (uid 1000) and nothing else.
// Call after DropBoundingAndAmbientInChild.
int KeepOnlyKillCapabilityInChild();

}  // namespace sbx
