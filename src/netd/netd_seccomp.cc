// The allowlist of syscalls sbx-netd makes while serving, compiled with libseccomp at build time.
#include "src/netd/netd_seccomp.h"

#include <fcntl.h>
#include <linux/netlink.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <cerrno>
#include <iterator>
#include <string>

#ifndef SBX_NETD_SECCOMP_NO_PREBUILT
#include "netd_seccomp_prebuilt.inc"  // kPrebuiltNetdFilter[], generated at build time
#endif

namespace sbx::netd {

const std::vector<SeccompRule>& NetdAllowedSyscalls() {
  static const auto* const kRows = new std::vector<SeccompRule>{
      // The event loop.
      {"epoll_create1", "Asio's reactor"},
      {"epoll_ctl", "Asio's reactor"},
      {"epoll_wait", "Asio's reactor"},
      {"epoll_pwait", "Asio's reactor (glibc may use the p-variant)"},
      {"eventfd2", "Asio's interrupter"},
      {"timerfd_create", "Asio's timers"},
      {"timerfd_settime", "Asio's timers"},
      {"pipe2", "the relay's pipes; Asio's interrupter when eventfd is missing"},
      {"splice", "the relay: socket -> pipe -> socket in the kernel"},
      {"poll", "glibc's resolver waits for DNS answers"},
      {"ppoll", "glibc's resolver waits for DNS answers"},
      // Descriptors and sockets.
      {"read", "sockets, /etc files"},
      {"write", "sockets, the audit log, stderr"},
      {"readv", "sockets"},
      {"writev", "sockets, stderr"},
      {"pread64", "NSS module loading (ELF headers); the CA files' memfd (offset at its end)"},
      {"lseek", "glibc stdio on /etc files"},
      {"close", "every fd"},
      {"fcntl", "O_NONBLOCK, FD_CLOEXEC, F_SETPIPE_SZ"},
      {"fstat", "glibc stdio, NSS module loading"},
      {"newfstatat", "glibc checks /etc/resolv.conf and nsswitch.conf for changes"},
      {"statx", "glibc stat on newer kernels"},
      {"connect", "upstream connections; the resolver's UDP and netlink sockets"},
      {"accept", "capture listeners"},
      {"accept4", "capture listeners"},
      {"getsockname", "a connection's original destination"},
      {"getpeername", "Asio"},
      {"getsockopt", "SO_ERROR after a non-blocking connect; capture socket checks; SO_ORIGINAL_DST"},
      {"setsockopt", "SO_LINGER (reset), TCP_NODELAY, IP_PKTINFO"},
      {"shutdown", "half-close"},
      {"sendto", "sockets; resolver queries"},
      {"recvfrom", "sockets; resolver answers"},
      {"sendmsg", "DNS answers with IP_PKTINFO; the control socket"},
      {"recvmsg", "DNS queries; the control socket; netlink"},
      {"sendmmsg", "glibc's resolver sends the A and AAAA queries together"},
      {"bind", "glibc binds its netlink socket"},
      // Memory and threads.
      {"brk", "malloc"},
      {"mmap", "malloc, thread stacks, NSS modules"},
      {"munmap", "malloc, thread stacks"},
      {"mremap", "malloc"},
      {"mprotect", "thread stack guards, NSS modules"},
      {"madvise", "malloc trimming, thread exit"},
      {"futex", "the resolver thread's queue"},
      {"set_robust_list", "new threads"},
      {"rseq", "new threads (glibc 2.35+)"},
      {"rt_sigprocmask", "Asio blocks signals around thread creation"},
      {"rt_sigaction", "glibc installs its internal signal handlers with the first thread"},
      {"rt_sigreturn", "signal return"},
      {"sched_yield", "spin-wait fallbacks"},
      {"sched_getaffinity", "glibc's CPU count"},
      {"gettid", "glibc"},
      {"getpid", "glibc's resolver"},
      {"exit", "thread exit"},
      {"exit_group", "process exit"},
      {"restart_syscall", "interrupted sleeps"},
      // Time and host facts the resolver reads.
      {"clock_gettime", "timers and timestamps (vDSO fallback)"},
      {"clock_nanosleep", "sleeps"},
      {"nanosleep", "sleeps"},
      {"gettimeofday", "vDSO fallback"},
      {"uname", "glibc's resolver derives the search domain from the host name"},
      {"sysinfo", "glibc's qsort sizes its buffer (getaddrinfo sorts its results)"},
      {"getrandom", "glibc's resolver ids and malloc"},
      {"getuid", "NSS"},
      {"geteuid", "NSS"},
      {"getgid", "NSS"},
      {"getegid", "NSS"},
  };
  return *kRows;
}

namespace {

struct ArgRule {
  const char* syscall;
  uint32_t action;
  std::vector<scmp_arg_cmp> when;
};

std::vector<ArgRule> ArgumentRules() {
  const uint32_t allow = SCMP_ACT_ALLOW;
  // Writes, creation and truncation are never needed: NSS only reads.
  const uint64_t write_flags = O_ACCMODE | O_CREAT | O_TRUNC | O_APPEND | O_TMPFILE;
  return {
      {"openat", allow, {SCMP_A2(SCMP_CMP_MASKED_EQ, write_flags, 0)}},
      {"socket", allow, {SCMP_A0(SCMP_CMP_EQ, AF_INET)}},
      {"socket", allow, {SCMP_A0(SCMP_CMP_EQ, AF_INET6)}},
      // nscd's socket, which glibc tries before reading /etc/hosts.
      {"socket", allow, {SCMP_A0(SCMP_CMP_EQ, AF_UNIX)}},
      // getaddrinfo reads the host's addresses (RTM_GETADDR) to sort its results.
      {"socket", allow, {SCMP_A0(SCMP_CMP_EQ, AF_NETLINK), SCMP_A2(SCMP_CMP_EQ, NETLINK_ROUTE)}},
      // Threads only: a new process (fork, posix_spawn) is never netd's business.
      {"clone", allow, {SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, CLONE_THREAD)}},
      {"clone3", SCMP_ACT_ERRNO(ENOSYS), {}},
      // Asio sets O_NONBLOCK with FIONBIO; glibc's resolver sizes an answer with FIONREAD.
      // The command is an unsigned int: only its low 32 bits are compared, as the kernel does.
      {"ioctl", allow, {SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, FIONBIO)}},
      {"ioctl", allow, {SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, FIONREAD)}},
      // Reading a limit (glibc's thread stack size); never setting one.
      {"prlimit64", allow, {SCMP_A2(SCMP_CMP_EQ, 0)}},
  };
}

}  // namespace

Result<std::unique_ptr<SeccompProgram>> CompileNetdSeccompProgramUncached() {
  struct Context {
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_KILL_PROCESS);
    ~Context() {
      if (ctx != nullptr) seccomp_release(ctx);
    }
  } filter;
  if (filter.ctx == nullptr) return MakeError(ErrorCode::kInternal, "seccomp_init failed");
  int rc = seccomp_attr_set(filter.ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
  if (rc < 0) return SysError(ErrorCode::kInternal, "seccomp_attr_set(ACT_BADARCH)", -rc);
  // A binary search over the syscall numbers: at install the kernel runs the filter once per
  // number for its action cache, and a search reaches any number in fewer instructions than a
  // chain.
  rc = seccomp_attr_set(filter.ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
  if (rc < 0) return SysError(ErrorCode::kInternal, "seccomp_attr_set(CTL_OPTIMIZE)", -rc);
  auto add = [&](const char* name, uint32_t action,
                 const std::vector<scmp_arg_cmp>& when) -> Result<void> {
    const int nr = seccomp_syscall_resolve_name(name);
    if (nr == __NR_SCMP_ERROR) {
      return MakeError(ErrorCode::kInternal, std::string("netd seccomp: unknown syscall ") + name);
    }
    const int added =
        seccomp_rule_add_array(filter.ctx, action, nr, static_cast<unsigned>(when.size()),
                               when.empty() ? nullptr : when.data());
    if (added < 0) {
      return SysError(ErrorCode::kInternal, std::string("seccomp_rule_add(") + name + ")", -added);
    }
    return Ok{};
  };
  for (const SeccompRule& row : NetdAllowedSyscalls()) {
    SBX_TRY(add(row.syscall, SCMP_ACT_ALLOW, {}));
  }
  for (const ArgRule& rule : ArgumentRules()) SBX_TRY(add(rule.syscall, rule.action, rule.when));
  return ExportSeccompProgram(filter.ctx);
}

#ifndef SBX_NETD_SECCOMP_NO_PREBUILT
const SeccompProgram& NetdSeccompProgram() {
  static const SeccompProgram* const kProgram = [] {
    auto* program = new SeccompProgram;
    program->instructions.assign(std::begin(kPrebuiltNetdFilter), std::end(kPrebuiltNetdFilter));
    return program;
  }();
  return *kProgram;
}
#endif

}  // namespace sbx::netd
