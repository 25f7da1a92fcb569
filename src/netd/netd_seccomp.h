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

#include "sandbox/error.h"
#include "sandbox/seccomp_filter.h"

namespace sbx::netd {

struct NetdSeccompFilter;
struct NetdSeccompFilterDeleter {
  void operator()(NetdSeccompFilter* filter) const;
};
using NetdSeccompFilterPtr = std::unique_ptr<NetdSeccompFilter, NetdSeccompFilterDeleter>;

Result<NetdSeccompFilterPtr> CompileNetdSeccompFilter();
// Loads the filter into the calling process (no_new_privs must be set). Irreversible.
Result<void> InstallNetdSeccompFilter(const NetdSeccompFilter& filter);

// The syscalls allowed whatever their arguments, with why netd needs each.
const std::vector<SeccompRule>& NetdAllowedSyscalls();

}  // namespace sbx::netd
