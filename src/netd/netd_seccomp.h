// sbx-netd's syscall filter: an allowlist. Any syscall not listed, and any listed one whose
// arguments fall outside what netd does, kills the process (SECCOMP_RET_KILL_PROCESS): netd
// parses bytes from the sandbox, so a parser bug must not become a shell, a file write or a
// new process. The runner sees netd die and ends the run (network_helper_died).
//
// What netd does while serving, and so what the list holds: epoll/eventfd/timerfd (Asio's
// reactor), socket I/O on inherited and new TCP sockets, splice(2) through pipes (the relay),
// the resolver thread Asio starts for
// getaddrinfo (clone with CLONE_THREAD only; clone3 answers ENOSYS so glibc falls back to
// clone, whose flags a filter can read), and what glibc's getaddrinfo needs: read-only opens of
// /etc/hosts, /etc/resolv.conf, /etc/nsswitch.conf and NSS modules, UDP and NETLINK_ROUTE
// sockets, poll. Foreign ABIs (i386, x32) are killed as well.
#pragma once

#include <memory>
#include <vector>

#include "base/error.h"
#include "sandbox/seccomp/seccomp_filter.h"

namespace sbx::netd {

// The filter, compiled from the tables below by libseccomp at build time
// (src/netd/gen/netd_seccomp_gen.cc): netd's start pays no compile. A unit test checks it
// equals a fresh compile. Install it with InstallSeccompInChild (no_new_privs must be set).
const SeccompProgram& NetdSeccompProgram();
// Compiles the tables now, with libseccomp (the generator and that test).
Result<std::unique_ptr<SeccompProgram>> CompileNetdSeccompProgramUncached();

// The syscalls allowed whatever their arguments, with why netd needs each.
const std::vector<SeccompRule>& NetdAllowedSyscalls();

}  // namespace sbx::netd
