// The syscall filter: a rule table compiled by libseccomp in the parent, installed in the child.
//
// Usage:
//   1. In the parent, before clone(): `auto program = CompileSeccompProgram(options);`
//      (compiled once per options value; later calls return the cached program).
//   2. In the child, as the very last step before execve():
//      `int err = InstallSeccompInChild(*program);` (async-signal-safe: no allocation, one
//      seccomp(2) call with SECCOMP_FILTER_FLAG_TSYNC; returns 0 or an errno).
//
// What the filter does (x86_64 only; on other arches CompileSeccompProgram returns an error):
//   - kills the process (SIGSYS) for foreign-ABI syscalls: i386 via int 0x80 and x32 (number
//     with bit 0x40000000 set), so rules written for x86_64 numbers cannot be sidestepped;
//   - denies with EPERM: every row of DeniedSyscalls() (namespace creation and entry, the mount
//     family including the new mount API, pivot_root, chroot, keyrings, bpf, perf_event_open,
//     userfaultfd, kexec_*, module loading, reboot, swap, acct, quotas, syslog, clock setting,
//     ptrace, process_vm_*, pidfd_getfd, kcmp, file handles, fanotify_init, ...);
//     clone with any CLONE_NEW* flag in its flags; ioctl TIOCSTI and TIOCLINUX (command compared
//     on its low 32 bits, as the kernel reads it); personality other than 0x0, 0x8, 0x20000,
//     0x20008 and the query 0xffffffff; socket(AF_NETLINK) with a protocol other than
//     NETLINK_ROUTE;
//   - answers EAFNOSUPPORT, as a kernel without the family would, for socket() families other
//     than AF_UNIX, AF_INET, AF_INET6 and AF_NETLINK (AF_UNIX and AF_NETLINK only when
//     allow_network_sockets is false), and for socketpair() families other than AF_UNIX;
//   - answers ENOSYS for clone3 (glibc then falls back to clone, whose flags can be checked)
//     and for io_uring_* (so programs that probe for it fall back to plain I/O);
//   - allows everything else: ordinary Python, threads, fork, subprocess, multiprocessing.
// Allowlisted argument values (personality, socket families) are compared as 64-bit values:
// high bits the kernel would ignore make the call refused, which is stricter, never looser.
#pragma once

#include <linux/filter.h>

#include <memory>
#include <vector>

#include "base/error.h"

namespace sbx {

struct SeccompOptions {
  // false also refuses AF_INET and AF_INET6 sockets (EAFNOSUPPORT). Each distinct value
  // compiles its own cached program. The launcher keeps them for every policy: with
  // "network": "none" they only reach the sandbox's own lo (local servers, multiprocessing
  // managers), and the network namespace, not the filter, keeps the host's network out.
  bool allow_network_sockets = true;
  bool operator==(const SeccompOptions&) const = default;
};

// A ready BPF program; lives in the parent, read by the child after clone.
struct SeccompProgram {
  std::vector<sock_filter> instructions;
  sock_fprog AsFprog() const;
};

// Compiles (or returns the cached) filter for `options`. Thread-safe. Fails, naming the row,
// if the rule table names a syscall libseccomp does not know; never skips a rule.
Result<const SeccompProgram*> CompileSeccompProgram(const SeccompOptions& options);

// Compiles with libseccomp, bypassing the cache and the build-time program (for the build-time
// generator and the test that checks the embedded program is current).
Result<std::unique_ptr<SeccompProgram>> CompileSeccompProgramUncached(const SeccompOptions& options);

// The BPF program libseccomp made of a filter context (a scmp_filter_ctx, passed as void* so
// this header does not need seccomp.h): for other filters built on the same tooling (sbx-netd's).
Result<std::unique_ptr<SeccompProgram>> ExportSeccompProgram(void* libseccomp_filter);

// Installs `program` for all threads of the calling process. Requires no_new_privs (or
// CAP_SYS_ADMIN). Async-signal-safe. Returns 0 or the errno of seccomp(2); EBUSY when TSYNC
// could not synchronize a thread (then no thread was filtered).
int InstallSeccompInChild(const SeccompProgram& program);

// A row of the rule table, exposed for unit tests and `sbx doctor`.
struct SeccompRule {
  const char* syscall;
  const char* why;
};
// The syscalls denied outright, whatever their arguments.
const std::vector<SeccompRule>& DeniedSyscalls();

}  // namespace sbx
