// The forwarding thread behind OutputForwarder.
#include "sandbox/launch/output_forwarder.h"

#include <system_error>

#include "base/write_all.h"

namespace sbx {
namespace {

// `why` says which of the two losses it was: a slow reader, or no thread to forward at all.
void WriteDroppedNote(int fd, uint64_t dropped_bytes, const char* why) {
  if (dropped_bytes == 0) return;
  std::string note = "\n[sbx: " + std::to_string(dropped_bytes) + " bytes not shown: " + why + "]\n";
  (void)WriteAll(fd, note);  // an error means the reader left: nothing to tell it
}

}  // namespace

OutputForwarder::OutputForwarder(int fd, size_t max_queued) : fd_(fd), max_queued_(max_queued) {}

OutputForwarder::~OutputForwarder() { Close(); }

void OutputForwarder::Push(const char* data, size_t size) {
  if (size == 0) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (closing_) return;
  // The thread starts with the first output: a run that prints nothing creates none. Without
  // one (the system refused a thread), the output is counted as dropped and Close says so.
  if (!thread_.joinable() && !no_thread_) {
    try {
      thread_ = std::thread([this] { Run(); });
    } catch (const std::system_error&) {
      no_thread_ = true;
    }
  }
  if (no_thread_ || queued_bytes_ + size > max_queued_) {
    dropped_bytes_ += size;
    return;
  }
  queue_.emplace_back(data, size);
  queued_bytes_ += size;
  wake_.notify_one();
}

void OutputForwarder::Close() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (closing_ && !thread_.joinable()) return;
    closing_ = true;
    wake_.notify_one();
  }
  if (thread_.joinable()) {
    thread_.join();
  } else if (no_thread_) {
    WriteDroppedNote(fd_, dropped_bytes_, "the system refused a thread to forward them");
  }
}

uint64_t OutputForwarder::dropped_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return dropped_bytes_;
}

void OutputForwarder::Run() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_.wait(lock, [this] { return closing_ || !queue_.empty(); });
    if (queue_.empty()) break;  // closing and drained
    std::string chunk = std::move(queue_.front());
    queue_.pop_front();
    queued_bytes_ -= chunk.size();
    lock.unlock();
    (void)WriteAll(fd_, chunk);  // EPIPE and friends: the reader left, the rest is dropped too
    lock.lock();
  }
  const uint64_t dropped = dropped_bytes_;
  lock.unlock();
  WriteDroppedNote(fd_, dropped, "the reader of this stream fell behind");
}

}  // namespace sbx
