// DisconnectWatch: runs a callback if a client hangs up while its request is in progress, so
// that an execution nobody waits for any more is cancelled.
#pragma once

#include <cstdint>
#include <functional>
#include <thread>

#include "base/unique_fd.h"

namespace sbx::server {

// Calls `on_disconnect` (once, on a watcher thread) if the client closes the connection while
// the watch lives; destroying the watch stops watching and waits for a callback in progress.
// One epoll thread serves every watch of the process, so a watch costs two epoll_ctl calls
// rather than starting and joining a thread, which was a third of the server's CPU time per
// execution (docs/performance.md); should the socket not go into the epoll set, the watch
// falls back to a thread of its own.
class DisconnectWatch {
 public:
  DisconnectWatch(int connection_fd, std::function<void()> on_disconnect);
  ~DisconnectWatch();
  DisconnectWatch(const DisconnectWatch&) = delete;
  DisconnectWatch& operator=(const DisconnectWatch&) = delete;

 private:
  uint64_t id_ = 0;  // in the shared watcher; 0: the fallback thread watches
  UniqueFd stop_;
  std::thread thread_;
};

}  // namespace sbx::server
