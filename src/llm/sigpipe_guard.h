// SigpipeGuard: keeps a SIGPIPE raised by this thread's writes from killing the process.
//
// With CURLOPT_NOSIGNAL (required in a threaded program) libcurl no longer ignores SIGPIPE
// itself, and a TLS library writing to a connection the server already closed can raise it.
// The guard blocks SIGPIPE for the calling thread while it lives, then discards one that
// arrived meanwhile and restores the thread's signal mask. No process-wide disposition is
// touched, so the embedding program keeps its own SIGPIPE policy.
#pragma once

#include <signal.h>

namespace sbx::llm {

class SigpipeGuard {
 public:
  SigpipeGuard();
  ~SigpipeGuard();
  SigpipeGuard(const SigpipeGuard&) = delete;
  SigpipeGuard& operator=(const SigpipeGuard&) = delete;

 private:
  sigset_t old_mask_;
  bool was_pending_ = false;  // a SIGPIPE pending before us is not ours to discard
};

}  // namespace sbx::llm
