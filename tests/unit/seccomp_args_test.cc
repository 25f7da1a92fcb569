// Tests for the seccomp argument rules (clone, socket, ioctl, personality) and foreign arches.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/netlink.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/personality.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <cstdint>

#include "sandbox/seccomp/seccomp_filter.h"
#include "tests/unit/seccomp_probe.h"

namespace sbx {
namespace {

using testing::Filter;
using testing::RunProbe;

constexpr long kX32SyscallBit = 0x40000000;
constexpr long kHighBits = 1L << 32;

// A fork-style raw clone: the child exits at once, the parent reaps it and returns its pid.
long CloneAndReap(unsigned long flags) {
  long pid = syscall(SYS_clone, flags | SIGCHLD, 0L, 0L, 0L, 0L);
  if (pid == 0) _exit(0);
  if (pid > 0) waitpid(static_cast<pid_t>(pid), nullptr, 0);
  return pid;
}

TEST(SeccompArgs, CloneWithNamespaceFlagsIsDeniedPlainCloneWorks) {
  EXPECT_GT(RunProbe(Filter::kOn, [] { return CloneAndReap(0); }).ret, 0);
  auto glibc_fork = [] {
    pid_t pid = fork();
    if (pid == 0) _exit(0);
    if (pid > 0) waitpid(pid, nullptr, 0);
    return static_cast<long>(pid);
  };
  EXPECT_GT(RunProbe(Filter::kOn, glibc_fork).ret, 0);
  for (unsigned long flag : {CLONE_NEWUSER, CLONE_NEWNS, CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWUTS,
                             CLONE_NEWIPC, CLONE_NEWCGROUP}) {
    auto probe = [flag] { return CloneAndReap(flag); };
    EXPECT_GT(RunProbe(Filter::kOff, probe).ret, 0) << std::hex << flag;
    EXPECT_EQ(RunProbe(Filter::kOn, probe).err, EPERM) << std::hex << flag;
  }
}

TEST(SeccompArgs, ThreadsWorkUnderTheFilter) {
  auto probe = [] {  // glibc tries clone3 (ENOSYS) and falls back to clone
    pthread_t thread;
    if (pthread_create(
            &thread, nullptr, [](void*) -> void* { return nullptr; }, nullptr) != 0)
      return -1L;
    return pthread_join(thread, nullptr) == 0 ? 0L : -1L;
  };
  EXPECT_EQ(RunProbe(Filter::kOn, probe).ret, 0);
}

long Socket(long domain, long type, long protocol) {
  long fd = syscall(SYS_socket, domain, type | SOCK_CLOEXEC, protocol);
  if (fd >= 0) close(static_cast<int>(fd));
  return fd < 0 ? fd : 0;
}

TEST(SeccompArgs, SocketFamiliesAreAllowlisted) {
  for (long family : {AF_UNIX, AF_INET, AF_INET6}) {
    EXPECT_EQ(RunProbe(Filter::kOn, [family] { return Socket(family, SOCK_STREAM, 0); }).ret, 0)
        << family;
  }
  auto packet = [] { return Socket(AF_PACKET, SOCK_RAW, 0); };
  EXPECT_EQ(RunProbe(Filter::kOff, packet).ret, 0);
  EXPECT_EQ(RunProbe(Filter::kOn, packet).err, EAFNOSUPPORT);
  // The kernel reads the family as an int: high bits would smuggle AF_PACKET past an EQ rule.
  auto smuggled = [] { return Socket(kHighBits | AF_PACKET, SOCK_RAW, 0); };
  EXPECT_EQ(RunProbe(Filter::kOff, smuggled).ret, 0);
  EXPECT_EQ(RunProbe(Filter::kOn, smuggled).err, EAFNOSUPPORT);
  for (long family : {0L, 3L, 9L, 11L, 15L, 17L, 40L, 45L, 0xffffL, -1L}) {
    EXPECT_EQ(RunProbe(Filter::kOn, [family] { return Socket(family, SOCK_STREAM, 0); }).err,
              EAFNOSUPPORT)
        << family;
  }
}

TEST(SeccompArgs, NetlinkOnlyRoute) {
  auto route = [] { return Socket(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE); };
  EXPECT_EQ(RunProbe(Filter::kOn, route).ret, 0);
  auto audit = [] { return Socket(AF_NETLINK, SOCK_RAW, NETLINK_AUDIT); };
  EXPECT_EQ(RunProbe(Filter::kOff, audit).ret, 0);
  EXPECT_EQ(RunProbe(Filter::kOn, audit).err, EPERM);
  auto uevent = [] { return Socket(AF_NETLINK, SOCK_RAW, NETLINK_KOBJECT_UEVENT); };
  EXPECT_EQ(RunProbe(Filter::kOn, uevent).err, EPERM);
}

TEST(SeccompArgs, SocketpairOnlyUnix) {
  auto pair = [](long family) {
    return [family] {
      int fds[2];
      long rc = syscall(SYS_socketpair, family, SOCK_STREAM | SOCK_CLOEXEC, 0, fds);
      return rc;
    };
  };
  EXPECT_EQ(RunProbe(Filter::kOn, pair(AF_UNIX)).ret, 0);
  EXPECT_EQ(RunProbe(Filter::kOff, pair(AF_INET)).err, EOPNOTSUPP);
  EXPECT_EQ(RunProbe(Filter::kOn, pair(AF_INET)).err, EAFNOSUPPORT);
}

TEST(SeccompArgs, NoNetworkOptionAlsoRefusesInet) {
  SeccompOptions no_network{.allow_network_sockets = false};
  for (long family : {AF_INET, AF_INET6}) {
    auto probe = [family] { return Socket(family, SOCK_STREAM, 0); };
    EXPECT_EQ(RunProbe(Filter::kOn, probe, no_network).err, EAFNOSUPPORT) << family;
  }
  auto unix_socket = [] { return Socket(AF_UNIX, SOCK_STREAM, 0); };
  EXPECT_EQ(RunProbe(Filter::kOn, unix_socket, no_network).ret, 0);
}

// TIOCSTI on the child's own new pty: harmless, and proves the kernel ignores the high bits.
long TiocstiOnPrivatePty(unsigned long request) {
  int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (master < 0 || grantpt(master) != 0 || unlockpt(master) != 0) return -100;
  int pty = open(ptsname(master), O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (pty < 0) return -101;
  char c = 'x';
  return syscall(SYS_ioctl, pty, request, &c);
}

TEST(SeccompArgs, TiocstiDeniedEvenWithHighBits) {
  for (unsigned long request : {0x0ul, 0x100000000ul, 0xffffffff00000000ul}) {
    request |= TIOCSTI;
    auto probe = [request] { return TiocstiOnPrivatePty(request); };
    EXPECT_EQ(RunProbe(Filter::kOff, probe).ret, 0) << std::hex << request;
    EXPECT_EQ(RunProbe(Filter::kOn, probe).err, EPERM) << std::hex << request;
  }
  auto linux_ioctl = [] { return syscall(SYS_ioctl, -1, kHighBits | TIOCLINUX, 0L); };
  EXPECT_EQ(RunProbe(Filter::kOff, linux_ioctl).err, EBADF);
  EXPECT_EQ(RunProbe(Filter::kOn, linux_ioctl).err, EPERM);
  auto other_ioctl = [] {  // ordinary terminal ioctls stay allowed
    termios t;
    return syscall(SYS_ioctl, -1, TCGETS, &t);
  };
  EXPECT_EQ(RunProbe(Filter::kOn, other_ioctl).err, EBADF);
}

TEST(SeccompArgs, PersonalityOnlyHarmlessValues) {
  for (unsigned long value : {0x0ul, 0x8ul, 0x20000ul, 0x20008ul, 0xfffffffful}) {
    auto probe = [value] { return syscall(SYS_personality, value); };
    EXPECT_GE(RunProbe(Filter::kOn, probe).ret, 0) << std::hex << value;
  }
  for (unsigned long value :
       {0x1ul, 0x7ul, 0x9ul, 0x1fffful, 0x20001ul, 0x20009ul, 0x0400000ul /* READ_IMPLIES_EXEC */,
        0x0040000ul /* ADDR_NO_RANDOMIZE */, 0xfffffffeul, 0x100000000ul, kHighBits | 0x8ul,
        ~0ul}) {
    auto probe = [value] { return syscall(SYS_personality, value); };
    EXPECT_EQ(RunProbe(Filter::kOn, probe).err, EPERM) << std::hex << value;
  }
  auto aslr_off = [] { return syscall(SYS_personality, ADDR_NO_RANDOMIZE); };
  EXPECT_GE(RunProbe(Filter::kOff, aslr_off).ret, 0);
}

TEST(SeccompArgs, X32SyscallsKillTheProcess) {
  auto probe = [] { return syscall(kX32SyscallBit | SYS_getpid); };
  auto control = RunProbe(Filter::kOff, probe);  // ENOSYS without CONFIG_X86_X32_ABI, else a pid
  EXPECT_TRUE(control.reported) << control;
  auto filtered = RunProbe(Filter::kOn, probe);
  EXPECT_FALSE(filtered.reported) << filtered;
  EXPECT_TRUE(filtered.KilledBy(SIGSYS)) << filtered;
}

TEST(SeccompArgs, I386SyscallsKillTheProcess) {
  auto probe = [] {
    long ret = 20;  // __NR_getpid on i386
    asm volatile("int $0x80" : "+a"(ret) : : "memory");
    return ret;
  };
  auto control = RunProbe(Filter::kOff, probe);
  if (!control.reported) GTEST_SKIP() << "this kernel has no i386 emulation: " << control;
  EXPECT_GT(control.ret, 0) << control;
  auto filtered = RunProbe(Filter::kOn, probe);
  EXPECT_FALSE(filtered.reported) << filtered;
  EXPECT_TRUE(filtered.KilledBy(SIGSYS)) << filtered;
}

}  // namespace
}  // namespace sbx
