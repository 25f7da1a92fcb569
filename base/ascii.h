// ASCII case folding for protocol text (host names, header and variable names, URL schemes),
// and the one plain-name rule for what becomes a directory name (run ids, pooled workspaces):
// locale-free, so no locale folds or admits a byte outside ASCII.
#pragma once

#include <string>
#include <string_view>

namespace sbx {

// [A-Za-z0-9-]{1,max_length}: safe as one path component (no '/', no '.', no "..").
inline bool IsAsciiAlnumDashName(std::string_view name, size_t max_length) {
  if (name.empty() || name.size() > max_length) return false;
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-')) return false;
  }
  return true;
}

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
