// Closes every inherited descriptor but the ones a process keeps.
#include "sandbox/isolation/close_fds.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace sbx {

int CloseAllFdsExcept(const int* keep, size_t count) {
  // Checked whole before anything is closed: a list out of order would close a kept fd.
  for (size_t i = 0; i < count; ++i) {
    if (keep[i] < 0 || (i > 0 && keep[i] <= keep[i - 1])) return EINVAL;
  }
  unsigned next = 0;  // the lowest fd not yet closed or kept
  for (size_t i = 0; i < count; ++i) {
    const unsigned fd = static_cast<unsigned>(keep[i]);
    if (fd > next && ::syscall(SYS_close_range, next, fd - 1, 0U) != 0) return errno;
    next = fd + 1;
  }
  if (::syscall(SYS_close_range, next, ~0U, 0U) != 0) return errno;
  return 0;
}

}  // namespace sbx
