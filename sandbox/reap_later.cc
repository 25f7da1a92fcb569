// A detached thread per child to reap, and a count of those still running.
#include "sandbox/reap_later.h"

#include <condition_variable>
#include <mutex>
#include <system_error>
#include <thread>

#include "sandbox/child_wait.h"

namespace sbx {
namespace {

struct Pending {
  std::mutex mutex;
  std::condition_variable done;
  int count = 0;
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

void WaitForReaps() {
  Pending& state = pending();
  std::unique_lock<std::mutex> lock(state.mutex);
  state.done.wait(lock, [&state] { return state.count == 0; });
}

}  // namespace sbx
