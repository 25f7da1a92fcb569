// A detached thread per child to reap.
#include "sandbox/reap_later.h"

#include <sys/wait.h>

#include <cerrno>
#include <system_error>
#include <thread>

namespace sbx {
namespace {

void Reap(pid_t pid) {
  while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
}

}  // namespace

void ReapLater(pid_t pid) {
  try {
    std::thread(Reap, pid).detach();
  } catch (const std::system_error&) {
    Reap(pid);  // no thread to be had: now, then
  }
}

}  // namespace sbx
