// A detached thread per child to reap, and a count of those still running; or, once asked, a
// list of children that WaitForReaps reaps itself.
#include "sandbox/launch/reap_later.h"

#include <condition_variable>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#include "sandbox/launch/child_wait.h"

namespace sbx {
namespace {

struct Pending {
  std::mutex mutex;
  std::condition_variable done;
  int count = 0;                // reaper threads still running
  bool only_in_wait = false;    // ReapOnlyInWaitForReaps() was called
  std::vector<pid_t> deferred;  // children noted for WaitForReaps
};

// Never destroyed: a reaper thread may still finish while the process runs its exit handlers.
Pending& pending() {
  static Pending* const instance = new Pending;
  return *instance;
}

}  // namespace

void ReapLater(pid_t pid) {
  Pending& state = pending();
  {
    std::lock_guard<std::mutex> lock(state.mutex);
    if (state.only_in_wait) {
      state.deferred.push_back(pid);
      return;
    }
    ++state.count;
  }
  auto reap_and_count = [&state, pid] {
    WaitForChild(pid);
    std::lock_guard<std::mutex> lock(state.mutex);
    --state.count;
    state.done.notify_all();
  };
  try {
    std::thread(reap_and_count).detach();
  } catch (const std::system_error&) {
    reap_and_count();  // no thread to be had: now, then
  }
}

void ReapOnlyInWaitForReaps() {
  Pending& state = pending();
  std::lock_guard<std::mutex> lock(state.mutex);
  state.only_in_wait = true;
}

void WaitForReaps() {
  Pending& state = pending();
  std::vector<pid_t> deferred;
  {
    std::lock_guard<std::mutex> lock(state.mutex);
    deferred.swap(state.deferred);
  }
  for (pid_t pid : deferred) WaitForChild(pid);
  std::unique_lock<std::mutex> lock(state.mutex);
  state.done.wait(lock, [&state] { return state.count == 0; });
}

}  // namespace sbx
