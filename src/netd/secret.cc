// Secret's wiping storage.
#include "src/netd/secret.h"

#include <cstring>
#include <utility>

namespace sbx::netd {

Secret::Secret(std::string_view bytes) : bytes_(new char[bytes.size() + 1]), size_(bytes.size()) {
  std::memcpy(bytes_.get(), bytes.data(), bytes.size());
  bytes_[size_] = '\0';
}

Secret::Secret(Secret&& other) noexcept
    : bytes_(std::move(other.bytes_)), size_(std::exchange(other.size_, 0)) {}

Secret& Secret::operator=(Secret&& other) noexcept {
  if (this != &other) {
    Wipe();
    bytes_ = std::move(other.bytes_);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

Secret::~Secret() { Wipe(); }

void Secret::Wipe() {
  if (bytes_) WipeBytes(bytes_.get(), size_ + 1);
  bytes_.reset();
  size_ = 0;
}

}  // namespace sbx::netd
