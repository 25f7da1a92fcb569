/* Escape probe: tries one privileged operation and prints "<name> <errno name>".
 *
 * Run both inside the sandbox (expect a denial) and on the host (the differential control).
 * On the host, as root, every attempt is harmless by construction: a bad pointer, fd or
 * operation makes the call fail with EFAULT/EBADF/EINVAL unless a filter stops it first, or
 * the call only affects this short-lived process (bubblewrap's try-syscall pattern). */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/bpf.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <unistd.h>

static const char* ErrnoName(int err) {
  switch (err) {
    case 0: return "OK";
    case EPERM: return "EPERM";
    case EFAULT: return "EFAULT";
    case EBADF: return "EBADF";
    case EINVAL: return "EINVAL";
    case ENOSYS: return "ENOSYS";
    case ESRCH: return "ESRCH";
    case EACCES: return "EACCES";
    case ENOENT: return "ENOENT";
    case EOPNOTSUPP: return "EOPNOTSUPP";
    case EAFNOSUPPORT: return "EAFNOSUPPORT";
    default: return strerror(err);
  }
}

static long Try(const char* name) {
  char* bad = (char*)1; /* never a valid pointer */
  if (!strcmp(name, "mount")) return mount(bad, bad, bad, 0, NULL);
  if (!strcmp(name, "umount")) return umount2(bad, 0);
  if (!strcmp(name, "unshare-user")) return unshare(CLONE_NEWUSER);
  if (!strcmp(name, "unshare-mount")) return unshare(CLONE_NEWNS);
  if (!strcmp(name, "setns")) return setns(-1, 0);
  if (!strcmp(name, "ptrace")) return ptrace(PTRACE_PEEKDATA, 0, bad, 0);
  if (!strcmp(name, "bpf")) return syscall(SYS_bpf, BPF_PROG_LOAD, bad, 128);
  if (!strcmp(name, "keyctl")) return syscall(SYS_keyctl, 0x7fff, 0, 0, 0, 0);
  if (!strcmp(name, "io_uring")) return syscall(SYS_io_uring_setup, 1, bad);
  if (!strcmp(name, "pivot_root")) return syscall(SYS_pivot_root, bad, bad);
  if (!strcmp(name, "chroot")) return chroot(bad);
  if (!strcmp(name, "perf_event_open")) return syscall(SYS_perf_event_open, bad, 0, -1, -1, 0);
  if (!strcmp(name, "fsopen")) return syscall(SYS_fsopen, bad, 0);
  if (!strcmp(name, "open_tree")) return syscall(SYS_open_tree, -1, bad, 0);
  if (!strcmp(name, "kexec_load")) return syscall(SYS_kexec_load, 0, 0, bad, 0xffffffffUL);
  if (!strcmp(name, "init_module")) return syscall(SYS_init_module, bad, 0, bad);
  if (!strcmp(name, "userfaultfd")) return syscall(SYS_userfaultfd, 0xffff);
#if defined(__x86_64__)
  if (!strcmp(name, "int80-getpid")) { /* the i386 ABI: a foreign architecture to the filter */
    long ret = 20;                      /* i386 getpid */
    __asm__ volatile("int $0x80" : "+a"(ret) : : "memory");
    if (ret < 0) errno = (int)-ret;
    return ret < 0 ? -1 : 0;
  }
#endif
  fprintf(stderr, "unknown probe %s\n", name);
  errno = EINVAL;
  return -2;
}

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    errno = 0;
    long rc = Try(argv[i]);
    if (rc == -2) return 2;
    printf("%s %s\n", argv[i], rc >= 0 ? "OK" : ErrnoName(errno));
  }
  return 0;
}
