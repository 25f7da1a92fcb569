// Bytes that must never outlive their use: the secrets sbx-netd injects, their placeholders and
// the run CA's key. Held in one fixed allocation that is wiped (explicit_bzero) when freed, so
// no reallocation leaves a copy behind; there is no way to print one.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "base/wipe.h"

namespace sbx::netd {

class Secret {
 public:
  Secret() = default;
  explicit Secret(std::string_view bytes);
  Secret(Secret&& other) noexcept;
  Secret& operator=(Secret&& other) noexcept;
  Secret(const Secret&) = delete;
  Secret& operator=(const Secret&) = delete;
  ~Secret();

  std::string_view view() const { return {bytes_.get(), size_}; }
  bool empty() const { return size_ == 0; }

 private:
  void Wipe();

  std::unique_ptr<char[]> bytes_;
  size_t size_ = 0;
};

}  // namespace sbx::netd
