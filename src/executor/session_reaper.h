// Ends pooled sessions off their owner's path: the pool's executors hand their session here
// when they are destroyed, and a thread of the pool finishes it.
//
// Ending a session is mostly waiting: its exit tears down its mount namespace (the kernel waits
// for an RCU grace period before it frees the unmounted tree),
// then its cgroup and its workspace are removed. Done inline, that was most of the time
// of a loop that acquires, runs and drops sessions back to back.
//
// Usage (SessionPool does this):
//   1. `SessionReaper reaper;` starts the thread.
//   2. `reaper.Retire(std::move(retired));` hangs the session up at once (its driver sees EOF
//      and exits, so exits overlap) and returns; the thread waits for the end, which removes
//      the session's cgroup, then removes its workspace.
//   3. `reaper.WaitIdle(seconds)`: true once everything retired so far is gone.
//   4. `reaper.Stop()` (or the destructor) finishes everything queued, then joins; a session
//      retired after that is ended inline. Nothing retired is ever left behind.
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

#include "sandbox/workspace/workspace.h"
#include "src/executor/driver_process.h"
#include "src/executor/python_session.h"

namespace sbx::executor {

// What an executor leaves: its running session, or a warm driver it never started, or
// neither; and its workspace (removed after the session is gone).
struct RetiredSession {
  std::unique_ptr<PythonSession> session;
  std::unique_ptr<DriverProcess> unstarted;
  Workspace workspace;
};

class SessionReaper {
 public:
  SessionReaper();
  ~SessionReaper();
  SessionReaper(const SessionReaper&) = delete;
  SessionReaper& operator=(const SessionReaper&) = delete;

  void Retire(RetiredSession retired);
  bool WaitIdle(double timeout_seconds);
  void Stop();

 private:
  void Loop();

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<RetiredSession> queue_;
  size_t finishing_ = 0;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace sbx::executor
