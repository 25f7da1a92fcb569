// The /proc walk behind SignalDescendants: raw syscalls and stack buffers only.
#include "sandbox/launch/process_tree.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <csignal>

#include <cerrno>
#include <cstddef>

namespace sbx {
namespace {

constexpr int kMaxPending = 4096;

struct Pending {
  pid_t pid;
  pid_t parent;  // the process whose children file listed it
};

// Appends the decimal digits of `value` at `out`; returns the end.
char* AppendNumber(char* out, long value) {
  char digits[24];
  int count = 0;
  do {
    digits[count++] = static_cast<char>('0' + value % 10);
    value /= 10;
  } while (value > 0);
  while (count > 0) *out++ = digits[--count];
  return out;
}

// "/proc/<pid>/<rest>" into `out` (at least 64 bytes; rest is short).
void ProcPath(char* out, pid_t pid, const char* rest) {
  const char prefix[] = "/proc/";
  for (const char* p = prefix; *p != '\0'; ++p) *out++ = *p;
  out = AppendNumber(out, pid);
  *out++ = '/';
  while (*rest != '\0') *out++ = *rest++;
  *out = '\0';
}

// Reads the space-separated pids of one children file into `pending`.
void ReadChildrenFile(int task_dir, const char* tid, pid_t parent, Pending* pending, int* count) {
  char path[48];
  char* end = path;
  for (const char* p = tid; *p != '\0' && end < path + 32; ++p) *end++ = *p;
  const char suffix[] = "/children";
  for (const char* p = suffix; *p != '\0'; ++p) *end++ = *p;
  *end = '\0';
  int fd = ::openat(task_dir, path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  char buffer[4096];
  long value = -1;
  for (;;) {
    ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    for (ssize_t i = 0; i < n; ++i) {
      if (buffer[i] >= '0' && buffer[i] <= '9') {
        value = (value < 0 ? 0 : value * 10) + (buffer[i] - '0');
      } else if (value >= 0) {
        if (*count < kMaxPending) pending[(*count)++] = {static_cast<pid_t>(value), parent};
        value = -1;
      }
    }
  }
  if (value >= 0 && *count < kMaxPending) pending[(*count)++] = {static_cast<pid_t>(value), parent};
  ::close(fd);
}

// Lists the children of every thread of `pid`.
void ListChildren(pid_t pid, Pending* pending, int* count) {
  char path[64];
  ProcPath(path, pid, "task");
  int dir = ::open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return;
  alignas(8) char entries[4096];
  long n;
  while ((n = ::syscall(SYS_getdents64, dir, entries, sizeof(entries))) > 0) {
    for (long offset = 0; offset < n;) {
      auto* entry = reinterpret_cast<struct dirent64*>(entries + offset);
      offset += entry->d_reclen;
      if (entry->d_name[0] >= '0' && entry->d_name[0] <= '9')
        ReadChildrenFile(dir, entry->d_name, pid, pending, count);
    }
  }
  ::close(dir);
}

// The parent pid in /proc/<pid>/stat ("pid (comm) state ppid ..."; comm may hold anything, so
// the field after its last ')'), or -1.
pid_t ParentOf(pid_t pid) {
  char path[64];
  ProcPath(path, pid, "stat");
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char buffer[512];
  ssize_t n;
  do {
    n = ::read(fd, buffer, sizeof(buffer) - 1);
  } while (n < 0 && errno == EINTR);
  ::close(fd);
  if (n <= 0) return -1;
  ssize_t close_paren = -1;
  for (ssize_t i = 0; i < n; ++i) {
    if (buffer[i] == ')') close_paren = i;
  }
  // ") S 1234 "
  ssize_t i = close_paren + 4;
  if (close_paren < 0 || i >= n) return -1;
  long value = 0;
  for (; i < n && buffer[i] >= '0' && buffer[i] <= '9'; ++i) value = value * 10 + (buffer[i] - '0');
  return static_cast<pid_t>(value);
}

bool SignalPidfd(int pidfd, int signal) {
  return ::syscall(SYS_pidfd_send_signal, pidfd, signal, nullptr, 0) == 0;
}

}  // namespace

int SignalDescendants(int signal) {
  Pending pending[kMaxPending];
  int count = 0;
  int signalled = 0;
  ListChildren(::getpid(), pending, &count);
  while (count > 0) {
    const Pending next = pending[--count];
    int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, next.pid, 0));
    if (pidfd < 0) continue;  // gone already
    // The pidfd names one process for good. /proc/<pid> named that same process when its stat
    // was read if the process is still unreaped after the read (a pid is freed only by the
    // reap): the signal 0 proves it.
    const bool ours = ParentOf(next.pid) == next.parent && SignalPidfd(pidfd, 0);
    if (ours) {
      ListChildren(next.pid, pending, &count);  // before the signal: a killed parent's go to us
      if (SignalPidfd(pidfd, signal)) ++signalled;
    }
    ::close(pidfd);
  }
  return signalled;
}

void KillDescendantsAndReap(pid_t watched, int* status, bool* ended) {
  for (;;) {
    SignalDescendants(SIGKILL);
    int reaped_status = 0;
    pid_t pid;
    while ((pid = ::waitpid(-1, &reaped_status, WNOHANG)) > 0) {
      if (pid == watched && !*ended) {
        *status = reaped_status;
        *ended = true;
      }
    }
    if (pid < 0 && errno == ECHILD) return;
    struct timespec pause {0, 1000000};  // the killed are still exiting
    ::nanosleep(&pause, nullptr);
  }
}

int CheckChildrenListing() {
  char path[64];
  ProcPath(path, ::getpid(), "task/");
  char* end = path;
  while (*end != '\0') ++end;
  end = AppendNumber(end, ::getpid());
  const char suffix[] = "/children";
  for (const char* p = suffix; *p != '\0'; ++p) *end++ = *p;
  *end = '\0';
  return ::access(path, R_OK) == 0 ? 0 : errno;
}

}  // namespace sbx
