// Head-and-tail capture of a stream under a byte cap.
#include "sandbox/output_capture.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace sbx {
namespace {

void WriteAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // EPIPE and friends: the reader left; keep capturing anyway
    data += n;
    size -= static_cast<size_t>(n);
  }
}

}  // namespace

OutputCapture::OutputCapture(uint64_t cap_bytes, int forward_fd)
    : cap_(std::max<uint64_t>(cap_bytes, 2)),
      head_cap_(cap_ - cap_ / 2),
      tail_cap_(cap_ / 2),
      forward_fd_(forward_fd) {}

void OutputCapture::Append(const char* data, size_t size) {
  total_ += size;
  size_t to_head = static_cast<size_t>(std::min<uint64_t>(size, head_cap_ - head_.size()));
  if (to_head > 0) {
    head_.append(data, to_head);
    if (forward_fd_ >= 0) WriteAll(forward_fd_, data, to_head);
    data += to_head;
    size -= to_head;
  }
  if (size == 0 || tail_cap_ == 0) return;
  if (size >= tail_cap_) {  // the chunk alone fills the tail
    tail_ring_.assign(data + size - tail_cap_, tail_cap_);
    tail_start_ = 0;
    return;
  }
  for (size_t i = 0; i < size; ++i) {
    if (tail_ring_.size() < tail_cap_) {
      tail_ring_.push_back(data[i]);
    } else {
      tail_ring_[tail_start_] = data[i];
      tail_start_ = (tail_start_ + 1) % tail_cap_;
    }
  }
}

std::string OutputCapture::TailInOrder() const {
  return tail_ring_.substr(tail_start_) + tail_ring_.substr(0, tail_start_);
}

std::string OutputCapture::Text() const {
  if (!truncated()) return head_ + TailInOrder();
  uint64_t cut = total_ - head_.size() - tail_ring_.size();
  return head_ + "\n[sbx: " + std::to_string(cut) + " bytes cut]\n" + TailInOrder();
}

void OutputCapture::Finish() {
  if (forward_fd_ < 0) return;
  std::string rest = Text().substr(head_.size());
  WriteAll(forward_fd_, rest.data(), rest.size());
}

}  // namespace sbx
