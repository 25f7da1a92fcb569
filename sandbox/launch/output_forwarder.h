// OutputForwarder: copies a sandbox's output to one of the runner's descriptors from its own
// thread (started by the first output), so a slow or stalled reader of the runner's stdout (a pager, a paused terminal, a
// full pipe) never stalls supervision: the timeout holds whatever the reader does.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <thread>

namespace sbx {

class OutputForwarder {
 public:
  // Writes to `fd` (not owned). At most `max_queued` bytes wait; beyond that chunks are
  // dropped and counted, and a note says so when the forwarder closes.
  OutputForwarder(int fd, size_t max_queued);
  ~OutputForwarder();  // Close()
  OutputForwarder(const OutputForwarder&) = delete;
  OutputForwarder& operator=(const OutputForwarder&) = delete;

  // Never blocks on the descriptor.
  void Push(const char* data, size_t size);
  // Writes what is queued (this may block on a reader that never reads; the sandbox is dead
  // by then) and stops the thread. Idempotent.
  void Close();
  uint64_t dropped_bytes() const;

 private:
  void Run();

  int fd_;
  size_t max_queued_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::string> queue_;
  size_t queued_bytes_ = 0;
  uint64_t dropped_bytes_ = 0;
  bool closing_ = false;
  bool no_thread_ = false;  // the first Push could not start the thread
  std::thread thread_;
};

}  // namespace sbx
