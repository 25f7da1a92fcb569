// Blocking, draining and restoring SIGPIPE around one transfer, for the calling thread only.
#include "src/llm/sigpipe_guard.h"

#include <pthread.h>

#include <cerrno>
#include <ctime>

namespace sbx::llm {
namespace {

sigset_t PipeOnly() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGPIPE);
  return set;
}

bool PipePending() {
  sigset_t pending;
  return sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1;
}

}  // namespace

SigpipeGuard::SigpipeGuard() {
  was_pending_ = PipePending();
  sigset_t pipe = PipeOnly();
  pthread_sigmask(SIG_BLOCK, &pipe, &old_mask_);
}

SigpipeGuard::~SigpipeGuard() {
  if (!was_pending_ && PipePending()) {
    sigset_t pipe = PipeOnly();
    timespec no_wait{0, 0};
    while (sigtimedwait(&pipe, nullptr, &no_wait) < 0 && errno == EINTR) {
    }
  }
  pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
}

}  // namespace sbx::llm
