// The seccomp rule table (as data), its compilation by libseccomp, and its installation.
#include "sandbox/seccomp/seccomp_filter.h"

#include <errno.h>
#include <linux/netlink.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <iterator>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "base/unique_fd.h"

#ifndef SBX_SECCOMP_NO_PREBUILT
#include "seccomp_prebuilt.inc"  // kPrebuiltDefaultFilter[], generated at build time
#endif

namespace sbx {
namespace {

// Syscalls answered with ENOSYS: callers treat it as "kernel too old" and fall back.
constexpr SeccompRule kEnosysSyscalls[] = {
    {"clone3", "flags live in a struct seccomp cannot read; glibc falls back to clone"},
    {"io_uring_setup", "io_uring bypasses seccomp for the I/O it performs; a CVE magnet"},
    {"io_uring_enter", "io_uring bypasses seccomp for the I/O it performs"},
    {"io_uring_register", "io_uring bypasses seccomp for the I/O it performs"},
};

// Denies `syscall` with `err` when every comparison in `when` matches.
struct ArgDenyRule {
  const char* syscall;
  int err;
  std::vector<scmp_arg_cmp> when;
  const char* why;
};

// Denies `syscall` with `err` when argument `arg` is none of `allowed`. Compared as 64-bit
// values, so a caller that sets high bits the kernel would ignore is refused: stricter, never
// looser, than the kernel's truncation to int.
struct AllowedValuesRule {
  const char* syscall;
  unsigned arg;
  int err;
  std::vector<uint64_t> allowed;  // sorted ascending
  const char* why;
};

// Bits 0-7 of clone's flags are the exit signal, so CLONE_NEWTIME (0x80) is reachable only
// through clone3 and unshare, both refused outright.
constexpr uint64_t kCloneNamespaceFlags[] = {CLONE_NEWNS,  CLONE_NEWCGROUP, CLONE_NEWUTS,
                                             CLONE_NEWIPC, CLONE_NEWUSER,   CLONE_NEWPID,
                                             CLONE_NEWNET};

std::vector<ArgDenyRule> ArgDenyRules() {
  std::vector<ArgDenyRule> rules;
  for (uint64_t flag : kCloneNamespaceFlags) {
    rules.push_back({"clone",
                     EPERM,
                     {{0, SCMP_CMP_MASKED_EQ, flag, flag}},
                     "a new namespace exposes kernel surface meant for real root"});
  }
  // ioctl's command is an unsigned int: compare the low 32 bits only, so high garbage cannot
  // slip past (CVE-2017-5226 was TIOCSTI).
  rules.push_back({"ioctl",
                   EPERM,
                   {{1, SCMP_CMP_MASKED_EQ, 0xffffffffu, TIOCSTI}},
                   "TIOCSTI pushes input into the terminal of the process outside"});
  rules.push_back({"ioctl",
                   EPERM,
                   {{1, SCMP_CMP_MASKED_EQ, 0xffffffffu, TIOCLINUX}},
                   "TIOCLINUX can also inject console input"});
  rules.push_back({"socket",
                   EPERM,
                   {{0, SCMP_CMP_EQ, AF_NETLINK, 0}, {2, SCMP_CMP_NE, NETLINK_ROUTE, 0}},
                   "only NETLINK_ROUTE (getaddrinfo, if_nameindex) is needed; the rest "
                   "(audit, xfrm, netfilter, uevents) is host-administration surface"});
  return rules;
}

std::vector<AllowedValuesRule> AllowedValuesRules(const SeccompOptions& options) {
  std::vector<uint64_t> families = {AF_UNIX, AF_NETLINK};
  if (options.allow_network_sockets) families = {AF_UNIX, AF_INET, AF_INET6, AF_NETLINK};
  return {
      {"personality",
       0,
       EPERM,
       {0x0, 0x8, 0x20000, 0x20008, 0xffffffff},
       "PER_LINUX, PER_LINUX32, UNAME26 and the query; READ_IMPLIES_EXEC, ADDR_NO_RANDOMIZE "
       "and friends weaken exploit mitigations"},
      // EAFNOSUPPORT is what a kernel built without the family answers: callers fall back.
      {"socket", 0, EAFNOSUPPORT, families,
       "packet, vsock, bluetooth, alg, tipc... sockets are rarely needed and often buggy"},
      {"socketpair", 0, EAFNOSUPPORT, {AF_UNIX}, "only AF_UNIX socketpairs exist in practice"},
  };
}

// The comparisons (any one matching) covering [lo, hi] with aligned power-of-two blocks.
std::vector<scmp_arg_cmp> CoverRange(unsigned arg, uint64_t lo, uint64_t hi) {
  std::vector<scmp_arg_cmp> blocks;
  while (true) {
    int bits = 0;
    while (bits < 63 && (lo & ((uint64_t{2} << bits) - 1)) == 0 &&
           lo + ((uint64_t{2} << bits) - 1) <= hi) {
      ++bits;
    }
    const uint64_t size_minus_one = (uint64_t{1} << bits) - 1;
    if (size_minus_one == 0) {
      blocks.push_back({arg, SCMP_CMP_EQ, lo, 0});
    } else {
      blocks.push_back({arg, SCMP_CMP_MASKED_EQ, ~size_minus_one, lo});
    }
    if (lo + size_minus_one >= hi) return blocks;
    lo += size_minus_one + 1;
  }
}

// The comparisons (any one matching) covering every 64-bit value not in `allowed`.
std::vector<scmp_arg_cmp> ComplementOf(unsigned arg, const std::vector<uint64_t>& allowed) {
  std::vector<scmp_arg_cmp> blocks;
  uint64_t next = 0;
  for (uint64_t value : allowed) {
    if (value > next) {
      for (const scmp_arg_cmp& block : CoverRange(arg, next, value - 1)) blocks.push_back(block);
    }
    next = value + 1;
  }
  if (!allowed.empty() && allowed.back() != UINT64_MAX) {
    blocks.push_back({arg, SCMP_CMP_GT, allowed.back(), 0});
  }
  return blocks;
}

struct SeccompCtxDeleter {
  void operator()(scmp_filter_ctx ctx) const { seccomp_release(ctx); }
};
using SeccompCtx = std::unique_ptr<void, SeccompCtxDeleter>;

Result<int> ResolveSyscall(const char* name) {
  int nr = seccomp_syscall_resolve_name(name);
  if (nr == __NR_SCMP_ERROR) {
    return MakeError(ErrorCode::kInternal,
                     std::string("rule table names unknown syscall \"") + name + "\"");
  }
  return nr;
}

Result<void> AddRule(scmp_filter_ctx ctx, const char* name, uint32_t action,
                     const std::vector<scmp_arg_cmp>& when) {
  SBX_ASSIGN_OR_RETURN(auto nr, ResolveSyscall(name));
  int rc = seccomp_rule_add_array(ctx, action, nr, static_cast<unsigned>(when.size()),
                                  when.empty() ? nullptr : when.data());
  if (rc < 0) {
    return SysError(ErrorCode::kInternal, std::string("seccomp_rule_add(") + name + ")", -rc);
  }
  return Ok{};
}

Result<void> AddAllRules(scmp_filter_ctx ctx, const SeccompOptions& options) {
  for (const SeccompRule& rule : DeniedSyscalls()) {
    SBX_TRY(AddRule(ctx, rule.syscall, SCMP_ACT_ERRNO(EPERM), {}));
  }
  for (const SeccompRule& rule : kEnosysSyscalls) {
    SBX_TRY(AddRule(ctx, rule.syscall, SCMP_ACT_ERRNO(ENOSYS), {}));
  }
  for (const ArgDenyRule& rule : ArgDenyRules()) {
    SBX_TRY(AddRule(ctx, rule.syscall, SCMP_ACT_ERRNO(rule.err), rule.when));
  }
  for (const AllowedValuesRule& rule : AllowedValuesRules(options)) {
    for (const scmp_arg_cmp& block : ComplementOf(rule.arg, rule.allowed)) {
      SBX_TRY(AddRule(ctx, rule.syscall, SCMP_ACT_ERRNO(rule.err), {block}));
    }
  }
  return Ok{};
}

Result<std::vector<sock_filter>> ExportBpf(scmp_filter_ctx ctx) {
  UniqueFd fd(memfd_create("sbx-seccomp-bpf", MFD_CLOEXEC));
  if (!fd) return SysError(ErrorCode::kSetupFailed, "memfd_create(sbx-seccomp-bpf)");
  int rc = seccomp_export_bpf(ctx, fd.get());
  if (rc < 0) return SysError(ErrorCode::kInternal, "seccomp_export_bpf", -rc);
  struct stat st;
  if (fstat(fd.get(), &st) != 0) return SysError(ErrorCode::kIo, "fstat(seccomp memfd)");
  const size_t count = static_cast<size_t>(st.st_size) / sizeof(sock_filter);
  if (count == 0 || count > BPF_MAXINSNS || count * sizeof(sock_filter) != size_t(st.st_size)) {
    return MakeError(ErrorCode::kInternal, "seccomp_export_bpf produced " +
                                               std::to_string(st.st_size) +
                                               " bytes, not a loadable program");
  }
  std::vector<sock_filter> instructions(count);
  size_t done = 0;
  const size_t total = count * sizeof(sock_filter);
  while (done < total) {
    ssize_t n = pread(fd.get(), reinterpret_cast<char*>(instructions.data()) + done, total - done,
                      static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return SysError(ErrorCode::kIo, "pread(seccomp memfd)");
    if (n == 0) return MakeError(ErrorCode::kIo, "pread(seccomp memfd): short read");
    done += static_cast<size_t>(n);
  }
  return instructions;
}

Result<std::unique_ptr<SeccompProgram>> Compile(const SeccompOptions& options) {
  if (seccomp_arch_native() != SCMP_ARCH_X86_64) {
    return MakeError(ErrorCode::kUnavailable,
                     "the seccomp filter is defined for x86_64 only (clone's flags argument and "
                     "the syscall table differ elsewhere); refusing to run unfiltered");
  }
  SeccompCtx ctx(seccomp_init(SCMP_ACT_ALLOW));
  if (!ctx) return MakeError(ErrorCode::kInternal, "seccomp_init failed");
  // Only the native arch is in the filter: i386 (int 0x80) and x32 (nr | 0x40000000) syscalls
  // take the bad-arch action, so rules written for x86_64 numbers cannot be sidestepped.
  int rc = seccomp_attr_set(ctx.get(), SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
  if (rc < 0) return SysError(ErrorCode::kInternal, "seccomp_attr_set(ACT_BADARCH)", -rc);
  // A binary search over the syscall numbers instead of a chain of comparisons. At install
  // the kernel runs the filter once per syscall number to find those it may allow without
  // running it (its action cache), and the arguments of clone, ioctl, socket and the like
  // are checked on every call: a search reaches any number in fewer instructions than a chain
  // (the install's cost at each run's start: docs/performance.md).
  rc = seccomp_attr_set(ctx.get(), SCMP_FLTATR_CTL_OPTIMIZE, 2);
  if (rc < 0) return SysError(ErrorCode::kInternal, "seccomp_attr_set(CTL_OPTIMIZE)", -rc);
  SBX_TRY_CTX(AddAllRules(ctx.get(), options), "seccomp");
  auto program = ExportSeccompProgram(ctx.get());
  if (!program) return program.error().Context("seccomp");
  return program;
}

}  // namespace

const std::vector<SeccompRule>& DeniedSyscalls() {
  static const auto* const kRows = new std::vector<SeccompRule>{
      // Memory-layout and NUMA calls Docker's profile also refuses: the LDT is an old source of
      // kernel bugs, and page migration reaches into other processes' memory placement.
      {"modify_ldt", "x86 local descriptor table: kernel attack surface, unused by 64-bit code"},
      {"move_pages", "moves pages of (other) processes between NUMA nodes"},
      {"migrate_pages", "moves another process's pages between NUMA nodes"},
      {"process_madvise", "advice on another process's memory"},
      // Namespaces: creating or entering one reaches code written for real root.
      {"unshare", "new namespaces (user namespaces above all) are a large attack surface"},
      {"setns", "entering another namespace"},
      // Mounts, old and new API: the sandbox's view of the filesystem is fixed by the parent.
      {"mount", "changing the filesystem view"},
      {"umount2", "uncovering what the parent mounted over"},
      {"fsopen", "new mount API"},
      {"fsconfig", "new mount API"},
      {"fsmount", "new mount API"},
      {"fspick", "new mount API"},
      {"open_tree", "new mount API: can clone mounts"},
      {"move_mount", "new mount API"},
      {"mount_setattr", "new mount API: can drop read-only or nosuid"},
      {"pivot_root", "changing the root"},
      {"chroot", "changing the root; a classic escape with an open directory fd"},
      // Kernel keyrings: not namespaced, so keys can leak between sandboxes.
      {"keyctl", "kernel keyring is not namespaced"},
      {"add_key", "kernel keyring is not namespaced"},
      {"request_key", "kernel keyring is not namespaced; can call out to user space helpers"},
      // Kernel programmability and introspection.
      {"bpf", "eBPF verifier bugs are a steady source of privilege escalations"},
      {"perf_event_open", "leaks kernel addresses and has a long CVE record"},
      {"userfaultfd", "lets a process stall the kernel mid-copy, widening race windows"},
      // The machine itself.
      {"kexec_load", "loading a new kernel"},
      {"kexec_file_load", "loading a new kernel"},
      {"init_module", "loading kernel code"},
      {"finit_module", "loading kernel code"},
      {"delete_module", "unloading kernel code"},
      {"create_module", "obsolete module call; refused for completeness"},
      {"get_kernel_syms", "obsolete module call; refused for completeness"},
      {"query_module", "obsolete module call; refused for completeness"},
      {"reboot", "rebooting or halting the host"},
      {"swapon", "host memory configuration"},
      {"swapoff", "host memory configuration"},
      {"acct", "host process accounting"},
      {"quotactl", "host disk quotas"},
      {"quotactl_fd", "host disk quotas"},
      {"syslog", "reads the kernel log (addresses) and changes console levels"},
      {"lookup_dcookie", "kernel profiling interface"},
      {"nfsservctl", "removed kernel NFS server control"},
      {"_sysctl", "removed binary sysctl interface"},
      {"uselib", "obsolete a.out loader"},
      {"vhangup", "hangs up the terminal"},
      {"iopl", "raw I/O port access"},
      {"ioperm", "raw I/O port access"},
      // Clocks are not namespaced (except CLOCK_MONOTONIC/BOOTTIME offsets).
      {"settimeofday", "setting the host clock"},
      {"clock_settime", "setting the host clock"},
      {"clock_adjtime", "adjusting the host clock"},
      {"adjtimex", "adjusting the host clock"},
      // Other processes: observing or steering them.
      {"ptrace", "debugging other processes; seccomp could be bypassed before kernel 4.8"},
      {"process_vm_readv", "reading another process's memory"},
      {"process_vm_writev", "writing another process's memory"},
      {"pidfd_getfd", "stealing a file descriptor from another process"},
      {"kcmp",
       "compares kernel objects of other processes (ptrace-class introspection; "
       "Docker refuses it too); no ordinary program needs it"},
      // File handles: open_by_handle_at escaped Docker in 2014 ("shocker").
      {"open_by_handle_at", "opens any file on the filesystem by handle, bypassing mounts"},
      {"name_to_handle_at", "produces the handles open_by_handle_at consumes"},
      {"fanotify_init", "filesystem-wide event monitoring"},
      {"remap_file_pages", "deprecated since Linux 3.16, emulated, and a past CVE source"},
  };
  return *kRows;
}

Result<std::unique_ptr<SeccompProgram>> ExportSeccompProgram(void* libseccomp_filter) {
  auto instructions = ExportBpf(static_cast<scmp_filter_ctx>(libseccomp_filter));
  if (!instructions) return instructions.error();
  auto program = std::make_unique<SeccompProgram>();
  program->instructions = std::move(*instructions);
  return program;
}

Result<std::unique_ptr<SeccompProgram>> CompileSeccompProgramUncached(const SeccompOptions& options) {
  return Compile(options);
}

Result<const SeccompProgram*> CompileSeccompProgram(const SeccompOptions& options) {
  static std::mutex mutex;
  static auto* const cache =
      new std::vector<std::pair<SeccompOptions, std::unique_ptr<SeccompProgram>>>();
  std::lock_guard<std::mutex> lock(mutex);
  for (const auto& [cached_options, program] : *cache) {
    if (cached_options == options) return static_cast<const SeccompProgram*>(program.get());
  }
#ifndef SBX_SECCOMP_NO_PREBUILT
  // The default filter was compiled by this same table and libseccomp at build time
  // (sandbox/seccomp/gen/seccomp_gen.cc): each CLI start saves the compile. A unit test checks
  // it equals a fresh compile.
  if (options == SeccompOptions{}) {
    auto prebuilt = std::make_unique<SeccompProgram>();
    prebuilt->instructions.assign(std::begin(kPrebuiltDefaultFilter), std::end(kPrebuiltDefaultFilter));
    cache->emplace_back(options, std::move(prebuilt));
    return static_cast<const SeccompProgram*>(cache->back().second.get());
  }
#endif
  SBX_ASSIGN_OR_RETURN(auto program, Compile(options));
  cache->emplace_back(options, std::move(program));
  return static_cast<const SeccompProgram*>(cache->back().second.get());
}

}  // namespace sbx
