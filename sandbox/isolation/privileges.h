// Ids and privileges a sandboxed process gives up: the launcher's program and init, and every
// pooled session (sandbox/session_setup), through the same calls.
//
// Usage, in a child that still holds its namespace capabilities:
//   `int err = DropPrivilegesInChild(capabilities, drop_groups, &failed_step);` empties the
//   bounding and ambient sets, sheds the supplementary groups (when `drop_groups`: root mode,
//   where setgroups is allowed), becomes uid/gid 1000, re-arms the parent-death signal (an id
//   change clears it), empties the effective, permitted and inheritable sets, and sets
//   no_new_privs. Returns 0 or an errno, with `failed_step` naming the step.
//   `DropIdsAndCapabilitiesInChild(drop_groups, &failed_step)` is the same without the
//   bounding and ambient sets, for a process whose parent emptied them before forking it (a
//   fork inherits both).
#pragma once

#include <cstdint>

#include "sandbox/isolation/capabilities.h"
#include "sandbox/launch/child_report.h"

namespace sbx {

// setgroups(0) when `drop_groups`, then gid and uid `id`, then the parent-death signal
// (SIGKILL) again. Raw syscalls, not glibc's wrappers: those broadcast id changes to every
// thread the parent had (the child has only one) and take locks a parent thread may have held
// at clone time. Async-signal-safe; returns 0 or an errno.
int SetIdsInChild(uint32_t id, bool drop_groups);

// Async-signal-safe; returns 0 or an errno and sets *failed_step.
int DropPrivilegesInChild(const CapabilityPlan& capabilities, bool drop_groups, ChildStep* failed_step);
int DropIdsAndCapabilitiesInChild(bool drop_groups, ChildStep* failed_step);

}  // namespace sbx
