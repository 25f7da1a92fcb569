// The sizes of the reads a fuzz input arrives in, as a connection's bytes would: uneven, some of
// a few bytes, some of hundreds, from a small generator seeded by the input so a crash reproduces.
#pragma once

#include <cstddef>
#include <cstdint>

namespace sbx::netd::fuzz {

class ReadSizes {
 public:
  explicit ReadSizes(size_t input_size)
      : state_(static_cast<uint32_t>(input_size) * 2654435761u + 1) {}

  // The next read's size, 1 to 700 bytes.
  size_t Next() {
    state_ = state_ * 1103515245u + 12345u;
    return state_ >> 16 & 1 ? 1 + (state_ >> 17) % 7 : 1 + (state_ >> 17) % 700;
  }

 private:
  uint32_t state_;
};

}  // namespace sbx::netd::fuzz
