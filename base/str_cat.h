// Building a string from pieces and numbers in one call.
//
//   std::string options = StrCat({"size=", Decimal(bytes), ",mode=0700"});
//
// Out of line, so the many call sites on a run's start share one copy of the code instead of
// each inlining a chain of operator+ and std::to_string (an emulator translates every distinct
// piece of code a run executes; docs/performance.md).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

namespace sbx {

// The pieces joined, the result sized once.
std::string StrCat(std::initializer_list<std::string_view> pieces);

// The decimal digits of a number, usable as a piece (it must outlive the StrCat call only).
class Decimal {
 public:
  explicit Decimal(uint64_t value);
  operator std::string_view() const { return {digits_ + sizeof(digits_) - size_, size_}; }

 private:
  char digits_[20];
  uint8_t size_ = 0;
};

}  // namespace sbx
