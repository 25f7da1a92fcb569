// What sbx-netd does to itself before it reads a byte of the runner's messages or the
// sandbox's traffic, in this order:
//   1. PR_SET_PDEATHSIG(SIGKILL), then exit if the runner is already gone (the parent changed):
//      netd must never outlive the run it serves. EOF on the control socket is the backstop.
//   2. RLIMIT_NOFILE 4096 (soft and hard): six fds per relayed connection (two sockets, two
//      pipes), bounded.
//   3. As root: drop the capability bounding set and ambient set, setgroups(0), then gid and
//      uid 65534 (nobody): netd needs no privilege, its sockets come ready-made.
//   4. Empty the effective, permitted and inheritable capability sets (a non-root runner with
//      capabilities passes them on otherwise). PR_SET_PDEATHSIG again: a credential change
//      clears it.
//   5. PR_SET_DUMPABLE 0: no core dump or ptrace attach by same-uid processes, which could read
//      the policy and, later, secrets.
//   6. no_new_privs, then the seccomp filter (netd_seccomp.h), last.
#pragma once

#include "base/error.h"

namespace sbx::netd {

inline constexpr unsigned kNetdNoFileLimit = 4096;
inline constexpr unsigned kNetdUnprivilegedId = 65534;

Result<void> HardenProcess();

}  // namespace sbx::netd
