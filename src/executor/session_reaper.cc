// SessionReaper: one thread that waits for retired sessions to end and removes what they leave.
#include "src/executor/session_reaper.h"

#include <chrono>

#include "base/remove_tree.h"

namespace sbx::executor {
namespace {

void Hangup(RetiredSession& retired) {
  if (retired.session) retired.session->Hangup();
  if (retired.unstarted) retired.unstarted->Hangup();
}

// Waits for the session's processes to be gone (their driver's destructor), then removes the
// workspace, which nothing of the session can write any more.
void Finish(RetiredSession& retired) {
  retired.session.reset();
  retired.unstarted.reset();
  if (!retired.workspace.path.empty()) (void)RemoveTree(retired.workspace.path);
  retired.workspace = Workspace{};
}

}  // namespace

SessionReaper::SessionReaper() : thread_([this] { Loop(); }) {}

SessionReaper::~SessionReaper() { Stop(); }

void SessionReaper::Retire(RetiredSession retired) {
  Hangup(retired);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!stopping_) {
      queue_.push_back(std::move(retired));
      changed_.notify_all();
      return;
    }
  }
  Finish(retired);
}

bool SessionReaper::WaitIdle(double timeout_seconds) {
  std::unique_lock<std::mutex> lock(mutex_);
  return changed_.wait_for(lock, std::chrono::duration<double>(timeout_seconds),
                           [this] { return queue_.empty() && finishing_ == 0; });
}

void SessionReaper::Stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void SessionReaper::Loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    changed_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and everything queued is finished
    RetiredSession retired = std::move(queue_.front());
    queue_.pop_front();
    ++finishing_;
    lock.unlock();
    Finish(retired);
    lock.lock();
    --finishing_;
    changed_.notify_all();
  }
}

}  // namespace sbx::executor
