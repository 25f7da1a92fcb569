// Reaping a child whose exit nothing waits for any more.
#pragma once

#include <sys/types.h>

namespace sbx {

// Reaps `pid`, an unreaped child of this process that is exiting (or has been sent SIGKILL),
// from a detached thread, so the caller's result does not wait for the kernel's work at its
// exit: a sandbox init's namespace teardown, sbx-netd's address space. A process that exits
// first leaves the zombie to its own parent's reaper, as any exiting parent does.
void ReapLater(pid_t pid);

}  // namespace sbx
