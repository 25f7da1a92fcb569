// wait4 with its EINTR retry in one place; SIGKILL by pidfd.
#include "sandbox/launch/child_wait.h"

#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>

namespace sbx {

pid_t WaitForChild(pid_t pid, int* status, struct rusage* usage) {
  pid_t reaped;
  do {
    reaped = ::wait4(pid, status, 0, usage);
  } while (reaped < 0 && errno == EINTR);
  return reaped;
}

void KillAndWaitForChild(pid_t pid, int pidfd) {
  // ESRCH: it has exited already. Any other failure falls back to the pid, which is still
  // ours: the wait below must not block on a child that was never signalled.
  if (pidfd < 0 ||
      (::syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, nullptr, 0) != 0 && errno != ESRCH)) {
    ::kill(pid, SIGKILL);
  }
  WaitForChild(pid);
}

}  // namespace sbx
