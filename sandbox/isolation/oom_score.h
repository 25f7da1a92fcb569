// The runner's OOM score adjustment, which a clone hands to the sandbox, raised in the child to
// the kernel's default when the runner's was negative.
//
// Usage, in the cloned child while it is still dumpable (its /proc files its own):
//   `if (int err = RaiseInheritedOomScoreInChild()) FailSetup(sync_fd, ChildStep::kOomScore, err);`
#pragma once

namespace sbx {

// A negative oom_score_adj (a service manager's OOMScoreAdjust=, a protected daemon's) shields a
// process from the OOM killer, and a fork keeps it: inherited, it would shield the sandbox's
// untrusted program, on the host and inside its own memory cgroup (at -1000 the kernel kills
// none of its processes, not even for the cgroup's own limit). Raising it needs no privilege. A
// positive value, which only exposes the sandbox more, stays. Async-signal-safe; returns 0 or an
// errno.
int RaiseInheritedOomScoreInChild();

}  // namespace sbx
