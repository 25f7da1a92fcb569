// Unit tests for SigpipeGuard: a SIGPIPE raised inside is swallowed, and the mask restored.
#include "src/llm/sigpipe_guard.h"

#include <gtest/gtest.h>
#include <pthread.h>

#include <csignal>

namespace sbx::llm {
namespace {

bool PipeBlocked() {
  sigset_t mask;
  pthread_sigmask(SIG_SETMASK, nullptr, &mask);
  return sigismember(&mask, SIGPIPE) == 1;
}

TEST(LlmSigpipeGuard, AnUnguardedPipeSignalKills) {
  // The control: without the guard the same signal ends the process.
  EXPECT_EXIT(
      {
        std::signal(SIGPIPE, SIG_DFL);
        pthread_kill(pthread_self(), SIGPIPE);
        std::_Exit(0);
      },
      ::testing::KilledBySignal(SIGPIPE), "");
}

TEST(LlmSigpipeGuard, SwallowsAPipeSignalRaisedInsideAndRestoresTheMask) {
  EXPECT_EXIT(
      {
        std::signal(SIGPIPE, SIG_DFL);
        bool blocked_before = PipeBlocked();
        bool blocked_inside;
        {
          SigpipeGuard guard;
          blocked_inside = PipeBlocked();
          pthread_kill(pthread_self(), SIGPIPE);
        }
        sigset_t pending;
        sigpending(&pending);
        bool ok =
            !blocked_before && blocked_inside && !PipeBlocked() && !sigismember(&pending, SIGPIPE);
        std::_Exit(ok ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace sbx::llm
