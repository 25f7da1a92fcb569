// ASCII case folding for protocol text (host names, header and variable names, URL schemes):
// locale-free, so no locale folds a byte outside A-Z, and a UTF-8 byte is never changed.
#pragma once

#include <string>
#include <string_view>

namespace sbx {

inline char AsciiLower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

inline std::string AsciiLower(std::string_view text) {
  std::string lower(text);
  for (char& c : lower) c = AsciiLower(c);
  return lower;
}

inline bool StartsWithIgnoreAsciiCase(std::string_view text, std::string_view prefix) {
  if (text.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i) {
    if (AsciiLower(text[i]) != AsciiLower(prefix[i])) return false;
  }
  return true;
}

inline bool EqualsIgnoreAsciiCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && StartsWithIgnoreAsciiCase(a, b);
}

}  // namespace sbx
