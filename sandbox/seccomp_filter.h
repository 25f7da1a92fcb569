// The syscall filter: a rule table compiled by libseccomp in the parent, installed in the child.
//
// Usage:
//   1. In the parent, before clone(): `auto program = CompileSeccompProgram(options);`
//      (compiled once per options value; later calls return the cached program).
//   2. In the child, as the very last step before execve():
//      `int err = InstallSeccompInChild(*program);` (async-signal-safe: no allocation, one
//      seccomp(2) call with SECCOMP_FILTER_FLAG_TSYNC; returns 0 or an errno).
//
// What the filter does (x86_64; foreign architectures x32 and i386 are killed):
//   - denies with EPERM: namespace creation and entry (unshare, setns, clone with any
//     CLONE_NEW* flag), the mount family including the new mount API, pivot_root, chroot,
//     keyctl/add_key/request_key, bpf, perf_event_open, userfaultfd, kexec_*, module loading,
//     reboot, swapon/swapoff, acct, quotactl, syslog, clock setting, ptrace, process_vm_*,
//     open_by_handle_at, personality other than the harmless values, TIOCSTI and TIOCLINUX
//     ioctls (command compared masked to 32 bits), sockets of families other than AF_UNIX,
//     AF_INET, AF_INET6, and AF_NETLINK with protocol other than NETLINK_ROUTE;
//   - answers ENOSYS for clone3 (libc then falls back to clone, whose flags can be checked)
//     and for io_uring_* (so programs that probe for it fall back to plain I/O);
//   - allows everything else: ordinary Python, threads, fork, subprocess, multiprocessing.
#pragma once

#include <linux/filter.h>

#include <vector>

#include "sandbox/error.h"

namespace sbx {

struct SeccompOptions {
  // Reserved for policy-driven variations (today every policy gets the same filter).
  bool allow_network_sockets = true;
  bool operator==(const SeccompOptions&) const = default;
};

// A ready BPF program; lives in the parent, read by the child after clone.
struct SeccompProgram {
  std::vector<sock_filter> instructions;
  sock_fprog AsFprog() const;
};

// Compiles (or returns the cached) filter for `options`.
Result<const SeccompProgram*> CompileSeccompProgram(const SeccompOptions& options);

// Installs `program` for all threads of the calling process. Requires no_new_privs (or
// CAP_SYS_ADMIN). Async-signal-safe. Returns 0 or the errno of seccomp(2).
int InstallSeccompInChild(const SeccompProgram& program);

// A row of the rule table, exposed for unit tests and `sbx doctor`.
struct SeccompRule {
  const char* syscall;
  const char* why;
};
// The syscalls denied outright, whatever their arguments.
const std::vector<SeccompRule>& DeniedSyscalls();

}  // namespace sbx
