// The forwarding thread behind OutputForwarder.
#include "sandbox/output_forwarder.h"

#include <unistd.h>

#include <cerrno>

namespace sbx {
namespace {

void WriteAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // EPIPE and friends: the reader left
    data += n;
    size -= static_cast<size_t>(n);
  }
}

}  // namespace

OutputForwarder::OutputForwarder(int fd, size_t max_queued)
    : fd_(fd), max_queued_(max_queued), thread_([this] { Run(); }) {}

OutputForwarder::~OutputForwarder() { Close(); }

void OutputForwarder::Push(const char* data, size_t size) {
  if (size == 0) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (closing_) return;
  if (queued_bytes_ + size > max_queued_) {
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
  if (thread_.joinable()) thread_.join();
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
    WriteAll(fd_, chunk.data(), chunk.size());
    lock.lock();
  }
  if (dropped_bytes_ > 0) {
    std::string note = "\n[sbx: " + std::to_string(dropped_bytes_) +
                       " bytes not shown: the reader of this stream fell behind]\n";
    lock.unlock();
    WriteAll(fd_, note.data(), note.size());
  }
}

}  // namespace sbx
