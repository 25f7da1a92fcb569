// Tests for the seccomp deny list: the table itself, then every row against the real kernel.
#include "sandbox/seccomp/seccomp_filter.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/kcmp.h>
#include <linux/keyctl.h>
#include <linux/perf_event.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>

#include <set>
#include <string>

#include "tests/unit/seccomp_probe.h"

namespace sbx {
namespace {

using testing::Filter;
using testing::RunProbe;

// Every probe gets only invalid arguments (-1 as fd, pointer, flags) so that, unfiltered, the
// kernel rejects it before doing anything; filtered, the filter must answer first.
long CallWithInvalidArgs(int nr) { return syscall(nr, -1L, -1L, -1L, -1L, -1L, -1L); }

TEST(SeccompFilter, CompilesOnceAndCachesPerOptions) {
  auto first = CompileSeccompProgram({});
  ASSERT_TRUE(first) << first.error().ToString();
  EXPECT_FALSE((*first)->instructions.empty());
  EXPECT_LE((*first)->instructions.size(), size_t{BPF_MAXINSNS});
  auto again = CompileSeccompProgram({});
  ASSERT_TRUE(again);
  EXPECT_EQ(*first, *again);
  auto no_network = CompileSeccompProgram({.allow_network_sockets = false});
  ASSERT_TRUE(no_network);
  EXPECT_NE(*first, *no_network);
  sock_fprog fprog = (*first)->AsFprog();
  EXPECT_EQ(fprog.len, (*first)->instructions.size());
  EXPECT_EQ(fprog.filter, (*first)->instructions.data());
}

TEST(SeccompFilter, DenyTableNamesRealX86_64SyscallsOnceEach) {
  std::set<std::string> names;
  for (const SeccompRule& rule : DeniedSyscalls()) {
    EXPECT_GT(seccomp_syscall_resolve_name(rule.syscall), 0) << rule.syscall;
    EXPECT_TRUE(names.insert(rule.syscall).second) << "duplicate row " << rule.syscall;
    EXPECT_GT(std::string(rule.why).size(), 5u) << rule.syscall;
  }
  for (const char* required : {"unshare",
                               "setns",
                               "mount",
                               "umount2",
                               "fsopen",
                               "fsconfig",
                               "fsmount",
                               "fspick",
                               "open_tree",
                               "move_mount",
                               "mount_setattr",
                               "pivot_root",
                               "chroot",
                               "keyctl",
                               "add_key",
                               "request_key",
                               "bpf",
                               "perf_event_open",
                               "userfaultfd",
                               "kexec_load",
                               "kexec_file_load",
                               "init_module",
                               "finit_module",
                               "delete_module",
                               "reboot",
                               "swapon",
                               "swapoff",
                               "acct",
                               "quotactl",
                               "quotactl_fd",
                               "syslog",
                               "settimeofday",
                               "clock_settime",
                               "clock_adjtime",
                               "adjtimex",
                               "ptrace",
                               "process_vm_readv",
                               "process_vm_writev",
                               "open_by_handle_at",
                               "name_to_handle_at",
                               "lookup_dcookie",
                               "vhangup",
                               "iopl",
                               "ioperm",
                               "nfsservctl",
                               "uselib",
                               "_sysctl",
                               "pidfd_getfd",
                               "kcmp",
                               "fanotify_init",
                               "remap_file_pages"}) {
    EXPECT_EQ(names.count(required), 1u) << required;
  }
}

// The differential sweep: every row answers EPERM behind the filter, and something else
// without it (EINVAL, EFAULT, EBADF, ESRCH, ENOSYS...), proving the filter made the difference.
TEST(SeccompFilter, EveryDeniedSyscallAnswersEpermOnlyWhenFiltered) {
  for (const SeccompRule& rule : DeniedSyscalls()) {
    const int nr = seccomp_syscall_resolve_name(rule.syscall);
    auto filtered = RunProbe(Filter::kOn, [nr] { return CallWithInvalidArgs(nr); });
    EXPECT_TRUE(filtered.reported) << rule.syscall << " " << filtered;
    EXPECT_EQ(filtered.ret, -1) << rule.syscall;
    EXPECT_EQ(filtered.err, EPERM) << rule.syscall << " " << filtered;
    auto control = RunProbe(Filter::kOff, [nr] { return CallWithInvalidArgs(nr); });
    EXPECT_TRUE(control.reported) << rule.syscall << " " << control;
    EXPECT_NE(control.err, EPERM) << rule.syscall << ": the unfiltered control also got EPERM, "
                                  << "so this probe cannot tell the filter apart";
  }
}

// Category probes whose unfiltered control does real (but contained) work.

TEST(SeccompFilter, NamespaceCreationIsDenied) {
  auto probe = [] { return syscall(SYS_unshare, CLONE_NEWUSER); };
  EXPECT_EQ(RunProbe(Filter::kOff, probe).ret, 0);
  EXPECT_EQ(RunProbe(Filter::kOn, probe).err, EPERM);
  auto setns = [] { return syscall(SYS_setns, -1, 0); };
  EXPECT_EQ(RunProbe(Filter::kOff, setns).err, EBADF);
  EXPECT_EQ(RunProbe(Filter::kOn, setns).err, EPERM);
}

TEST(SeccompFilter, MountFamilyIsDenied) {
  auto mount = [] { return syscall(SYS_mount, 1L, 1L, 1L, 0L, 0L); };
  EXPECT_EQ(RunProbe(Filter::kOff, mount).err, EFAULT);
  EXPECT_EQ(RunProbe(Filter::kOn, mount).err, EPERM);
  auto fsopen = [] { return syscall(SYS_fsopen, "tmpfs", 0); };  // returns an fd, unattached
  EXPECT_GE(RunProbe(Filter::kOff, fsopen).ret, 0);
  EXPECT_EQ(RunProbe(Filter::kOn, fsopen).err, EPERM);
  auto open_tree = [] { return syscall(SYS_open_tree, AT_FDCWD, "/", 0); };  // an O_PATH fd
  EXPECT_GE(RunProbe(Filter::kOff, open_tree).ret, 0);
  EXPECT_EQ(RunProbe(Filter::kOn, open_tree).err, EPERM);
}

TEST(SeccompFilter, KeyringIsDenied) {
  // Creates the child's own process keyring: gone when the child exits.
  auto probe = [] {
    return syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_PROCESS_KEYRING, 1);
  };
  EXPECT_GE(RunProbe(Filter::kOff, probe).ret, 0);
  EXPECT_EQ(RunProbe(Filter::kOn, probe).err, EPERM);
}

TEST(SeccompFilter, KernelProgrammabilityIsDenied) {
  auto bpf = [] { return syscall(SYS_bpf, 0 /* BPF_MAP_CREATE */, 1L, 64); };
  EXPECT_EQ(RunProbe(Filter::kOff, bpf).err, EFAULT);
  EXPECT_EQ(RunProbe(Filter::kOn, bpf).err, EPERM);
  auto perf = [] { return syscall(SYS_perf_event_open, 1L, 0, -1, -1, 0); };
  EXPECT_EQ(RunProbe(Filter::kOff, perf).err, EFAULT);
  EXPECT_EQ(RunProbe(Filter::kOn, perf).err, EPERM);
  auto uffd = [] { return syscall(SYS_userfaultfd, O_CLOEXEC); };
  EXPECT_GE(RunProbe(Filter::kOff, uffd).ret, 0);
  EXPECT_EQ(RunProbe(Filter::kOn, uffd).err, EPERM);
}

TEST(SeccompFilter, ClockSettingIsDenied) {
  auto probe = [] { return syscall(SYS_clock_settime, CLOCK_REALTIME, 1L); };
  EXPECT_EQ(RunProbe(Filter::kOff, probe).err, EFAULT);
  EXPECT_EQ(RunProbe(Filter::kOn, probe).err, EPERM);
  auto read_clock = [] {  // reading the clock stays allowed
    timespec ts;
    return syscall(SYS_clock_gettime, CLOCK_REALTIME, &ts);
  };
  EXPECT_EQ(RunProbe(Filter::kOn, read_clock).ret, 0);
}

TEST(SeccompFilter, ProcessIntrospectionIsDenied) {
  auto vm_read = [] {
    char src[8] = "secret", dst[8] = {};
    iovec local{dst, sizeof(dst)}, remote{src, sizeof(src)};
    return syscall(SYS_process_vm_readv, getpid(), &local, 1, &remote, 1, 0);
  };
  EXPECT_EQ(RunProbe(Filter::kOff, vm_read).ret, 8);
  EXPECT_EQ(RunProbe(Filter::kOn, vm_read).err, EPERM);
  auto kcmp = [] { return syscall(SYS_kcmp, getpid(), getpid(), KCMP_VM, 0, 0); };
  EXPECT_EQ(RunProbe(Filter::kOff, kcmp).ret, 0);
  EXPECT_EQ(RunProbe(Filter::kOn, kcmp).err, EPERM);
  auto ptrace = [] { return syscall(SYS_ptrace, 16 /* PTRACE_ATTACH */, 0x7fffffff, 0, 0); };
  EXPECT_EQ(RunProbe(Filter::kOff, ptrace).err, ESRCH);
  EXPECT_EQ(RunProbe(Filter::kOn, ptrace).err, EPERM);
  auto pidfd_getfd = [] {
    long pidfd = syscall(SYS_pidfd_open, getpid(), 0);
    return pidfd < 0 ? pidfd : syscall(SYS_pidfd_getfd, pidfd, 0, 0);
  };
  EXPECT_GE(RunProbe(Filter::kOff, pidfd_getfd).ret, 0);
  EXPECT_EQ(RunProbe(Filter::kOn, pidfd_getfd).err, EPERM);
}

TEST(SeccompFilter, FileHandlesAreDenied) {
  auto probe = [] {
    struct {
      file_handle handle;
      unsigned char bytes[MAX_HANDLE_SZ];
    } buffer;
    buffer.handle.handle_bytes = MAX_HANDLE_SZ;
    int mount_id;
    return syscall(SYS_name_to_handle_at, AT_FDCWD, "/", &buffer.handle, &mount_id, 0);
  };
  auto control = RunProbe(Filter::kOff, probe);
  EXPECT_TRUE(control.ret == 0 || control.err == EOPNOTSUPP) << control;
  EXPECT_EQ(RunProbe(Filter::kOn, probe).err, EPERM);
}

TEST(SeccompFilter, Clone3AndIoUringAnswerEnosys) {
  auto clone3 = [] { return syscall(SYS_clone3, 0L, 0L); };
  EXPECT_EQ(RunProbe(Filter::kOff, clone3).err, EINVAL);
  EXPECT_EQ(RunProbe(Filter::kOn, clone3).err, ENOSYS);
  auto setup = [] { return syscall(SYS_io_uring_setup, 1, 1L); };
  EXPECT_EQ(RunProbe(Filter::kOff, setup).err, EFAULT);
  EXPECT_EQ(RunProbe(Filter::kOn, setup).err, ENOSYS);
  for (long nr : {SYS_io_uring_enter, SYS_io_uring_register}) {
    auto probe = [nr] { return syscall(nr, -1, 0, 0, 0, 0, 0); };
    auto control = RunProbe(Filter::kOff, probe);  // EBADF or EINVAL, depending on the kernel
    EXPECT_TRUE(control.reported && control.ret == -1 && control.err != ENOSYS) << nr << control;
    EXPECT_EQ(RunProbe(Filter::kOn, probe).err, ENOSYS) << nr;
  }
}

}  // namespace
}  // namespace sbx

namespace sbx {
namespace {

// The program embedded at build time must be exactly what libseccomp makes of the table now.
TEST(SeccompPrebuilt, EqualsAFreshCompile) {
  auto fresh = CompileSeccompProgramUncached(SeccompOptions{});
  ASSERT_TRUE(fresh) << fresh.error().ToString();
  auto embedded = CompileSeccompProgram(SeccompOptions{});
  ASSERT_TRUE(embedded);
  ASSERT_EQ((*embedded)->instructions.size(), (*fresh)->instructions.size());
  for (size_t i = 0; i < (*fresh)->instructions.size(); ++i) {
    const sock_filter& a = (*embedded)->instructions[i];
    const sock_filter& b = (*fresh)->instructions[i];
    EXPECT_TRUE(a.code == b.code && a.jt == b.jt && a.jf == b.jf && a.k == b.k) << "instruction " << i;
  }
}

}  // namespace
}  // namespace sbx
