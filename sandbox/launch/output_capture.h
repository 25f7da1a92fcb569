// OutputCapture: keeps the head and the tail of one output stream within a byte cap.
//
// The first cap/2 bytes are kept as they arrive; after that a ring keeps the last cap/2
// bytes. Text() joins them with a marker saying how many bytes were cut. Optionally each
// chunk of the head is also handed to a forwarder as it arrives (the CLI's pass-through
// mode), and the cut marker and tail at Finish().
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace sbx {

class OutputForwarder;

class OutputCapture {
 public:
  // forwarder == nullptr: keep only. cap_bytes >= 2.
  OutputCapture(uint64_t cap_bytes, OutputForwarder* forwarder);

  void Append(const char* data, size_t size);
  // Ends the stream: forwards the marker and tail when pass-through is on.
  void Finish();

  bool truncated() const { return total_ > cap_; }
  uint64_t total_bytes() const { return total_; }
  // The kept bytes: head, then "\n[sbx: N bytes cut]\n", then tail when truncated.
  std::string Text() const;

 private:
  std::string TailInOrder() const;
  void Forward(const char* data, size_t size);

  uint64_t cap_;
  uint64_t head_cap_;
  uint64_t tail_cap_;
  OutputForwarder* forwarder_;
  std::string head_;
  std::string tail_ring_;  // circular once full (size tail_cap_); tail_start_ is the oldest byte
  size_t tail_start_ = 0;
  uint64_t total_ = 0;
};

}  // namespace sbx
