// Wiping bytes that held a secret (a key, an injected header value) before their memory is
// reused: explicit_bzero, which the compiler may not drop as a dead store the way it may drop
// memset before a free. Shared by the runner and sbx-netd, so neither needs libcrypto for it.
#pragma once

#include <string.h>

#include <cstddef>
#include <string>

namespace sbx {

inline void WipeBytes(void* data, size_t size) {
  if (size != 0) explicit_bzero(data, size);
}

// Wipes a std::string's bytes in place, then empties it.
inline void WipeString(std::string& text) {
  WipeBytes(text.data(), text.size());
  text.clear();
}

// Wipes a string when the scope ends, however it ends (early returns, exceptions).
class ScopedWipe {
 public:
  explicit ScopedWipe(std::string& text) : text_(text) {}
  ~ScopedWipe() { WipeString(text_); }
  ScopedWipe(const ScopedWipe&) = delete;
  ScopedWipe& operator=(const ScopedWipe&) = delete;

 private:
  std::string& text_;
};

}  // namespace sbx
