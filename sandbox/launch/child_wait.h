// Waiting for, and killing, one child of this process.
#pragma once

#include <sys/resource.h>
#include <sys/types.h>

namespace sbx {

// Reaps `pid`, a child of this process, retrying when a signal interrupts the wait. Returns
// what wait4 returned: `pid`, or -1 with errno (ECHILD: not ours, or already reaped).
pid_t WaitForChild(pid_t pid, int* status = nullptr, struct rusage* usage = nullptr);

// Sends SIGKILL through `pidfd`, which names this very process even if its pid were reused,
// then reaps it. Without a pidfd (-1: pidfd_open failed) the signal goes to `pid`, which is
// safe only because an unreaped child's pid cannot be reused.
void KillAndWaitForChild(pid_t pid, int pidfd);

}  // namespace sbx
