// The runner's scheduling priority, which a clone hands to the sandbox, lowered to the defaults
// in the cloned child.
//
// Usage, in the parent, after the clone and before the child joins a v1 cgroup:
//   `SBX_TRY(LowerInheritedPriorityInParent(child_pid));`
#pragma once

#include <sys/types.h>

#include "base/error.h"

namespace sbx {

// What the child took from the calling thread and gets back to the default:
//  - a real-time or deadline policy becomes SCHED_OTHER: CFS bandwidth limits (the policy's cpu
//    limit) do not throttle real-time tasks, and a v1 cpu cgroup refuses to take them in;
//  - a negative nice value becomes 0, and the real-time I/O class the default one.
// What only lowers the child's priority (a positive nice value, the idle class) stays. Lowering
// needs no privilege. Fails, naming the setting, when it cannot be done.
Result<void> LowerInheritedPriorityInParent(pid_t child);

}  // namespace sbx
