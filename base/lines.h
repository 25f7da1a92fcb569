// Text taken line by line without copying it: the /proc tables a run reads at its start
// (mountinfo, the id maps) are parsed on every `sbx run`.
#pragma once

#include <string_view>
#include <vector>

namespace sbx {

// The lines of `text` without their '\n', as views into it: a last line without a '\n' counts,
// and an empty text has none.
inline std::vector<std::string_view> SplitLines(std::string_view text) {
  std::vector<std::string_view> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

}  // namespace sbx
