#include "base/str_cat.h"

namespace sbx {

std::string StrCat(std::initializer_list<std::string_view> pieces) {
  size_t size = 0;
  for (std::string_view piece : pieces) size += piece.size();
  std::string joined;
  joined.reserve(size);
  for (std::string_view piece : pieces) joined.append(piece);
  return joined;
}

Decimal::Decimal(uint64_t value) {
  // Right-aligned in the buffer, last digit first.
  do {
    digits_[sizeof(digits_) - 1 - size_++] = static_cast<char>('0' + value % 10);
    value /= 10;
  } while (value != 0);
}

}  // namespace sbx
