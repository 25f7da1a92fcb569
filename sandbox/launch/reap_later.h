// Reaping a child whose exit nothing waits for any more.
#pragma once

#include <sys/types.h>

namespace sbx {

// Reaps `pid`, an unreaped child of this process that is exiting (or has been sent SIGKILL),
// from a thread, so the caller's result does not wait for the kernel's work at its exit: a
// sandbox init's namespace teardown, sbx-netd's address space.
void ReapLater(pid_t pid);

// From now on ReapLater only notes the child and WaitForReaps reaps it on the calling thread.
// For a process that calls WaitForReaps right after its one run (`sbx run`): there the thread
// overlaps nothing it waits for, and creating it (its stack, glibc's first-thread setup, its
// malloc arena) costs page faults on the run's critical path.
void ReapOnlyInWaitForReaps();

// Waits until every child handed to ReapLater has been reaped. A process that exits soon after
// its runs (the CLI) calls it last: an orphaned zombie goes to pid 1, which in a container may
// never reap it, and a namespace still being torn down would hold the run's mounts (its
// workspace's file system could not be unmounted yet).
void WaitForReaps();

}  // namespace sbx
