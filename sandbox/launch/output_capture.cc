// Head-and-tail capture of a stream under a byte cap.
#include "sandbox/launch/output_capture.h"

#include <algorithm>
#include <cstring>

#include "sandbox/launch/output_forwarder.h"

namespace sbx {
OutputCapture::OutputCapture(uint64_t cap_bytes, OutputForwarder* forwarder)
    : cap_(std::max<uint64_t>(cap_bytes, 2)),
      head_cap_(cap_ - cap_ / 2),
      tail_cap_(cap_ / 2),
      forwarder_(forwarder) {}

void OutputCapture::Forward(const char* data, size_t size) {
  if (forwarder_ != nullptr) forwarder_->Push(data, size);
}

void OutputCapture::Append(const char* data, size_t size) {
  total_ += size;
  size_t to_head = static_cast<size_t>(std::min<uint64_t>(size, head_cap_ - head_.size()));
  if (to_head > 0) {
    head_.append(data, to_head);
    Forward(data, to_head);
    data += to_head;
    size -= to_head;
  }
  if (size == 0 || tail_cap_ == 0) return;
  if (size >= tail_cap_) {  // the chunk alone fills the tail
    tail_ring_.assign(data + size - tail_cap_, tail_cap_);
    tail_start_ = 0;
    return;
  }
  if (tail_ring_.size() < tail_cap_) {  // still filling up
    size_t fill = std::min<size_t>(size, tail_cap_ - tail_ring_.size());
    tail_ring_.append(data, fill);
    data += fill;
    size -= fill;
  }
  // Overwrite the oldest bytes in at most two copies (the ring may wrap once).
  while (size > 0) {
    size_t run = std::min<size_t>(size, tail_cap_ - tail_start_);
    std::memcpy(tail_ring_.data() + tail_start_, data, run);
    tail_start_ = (tail_start_ + run) % tail_cap_;
    data += run;
    size -= run;
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
  if (forwarder_ == nullptr) return;
  std::string rest = Text().substr(head_.size());
  Forward(rest.data(), rest.size());
}

}  // namespace sbx
