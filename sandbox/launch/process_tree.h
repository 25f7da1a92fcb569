// Signalling the calling process's whole subtree without a pid namespace, through /proc: what
// an outer-isolation init does (init.h) where a namespaced one may kill(-1). Allocation-free and
// async-signal-safe: it runs in a child of a possibly multi-threaded runner.
#pragma once

#include <sys/types.h>

namespace sbx {

// Sends `signal` to every descendant of the calling process that /proc lists: the children file
// of each thread (/proc/<pid>/task/<tid>/children), recursively from the caller. Each target is
// pinned by a pidfd and checked, while pinned, to be the child of the process it was listed
// under, so a pid freed and reused meanwhile by an unrelated process is never signalled. Never
// a raw kill(), never kill(-1). Processes forked after their parent was listed are missed, and so
// is anything past 4096 at once: callers repeat until waitpid() reports ECHILD (a subreaper gets
// the orphans of killed descendants as its own children). Returns how many were signalled.
int SignalDescendants(int signal);

// SIGKILL to every descendant (SignalDescendants), reaping, repeated until waitpid() reports
// ECHILD: orphans of the killed reparent to the caller, a child subreaper, so each round finds
// what the last missed. When `watched` is reaped here, its status goes to *status and *ended.
void KillDescendantsAndReap(pid_t watched, int* status, bool* ended);

// 0 when this kernel lists children in /proc (CONFIG_PROC_CHILDREN), else an errno.
int CheckChildrenListing();

}  // namespace sbx
