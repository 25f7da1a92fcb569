// Size and duration parsing shared by the policy loader and the CLI flags.
#include "base/units.h"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <limits>

namespace sbx {

Result<uint64_t> ParseSize(const std::string& text) {
  const std::string hint = " (expected a size like \"512M\", \"2G\" or a byte count)";
  if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0])))
    return InvalidInput("\"" + text + "\" is not a size" + hint);
  size_t pos = 0;
  uint64_t value = 0;
  while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) {
    uint64_t digit = static_cast<uint64_t>(text[pos] - '0');
    if (value > (std::numeric_limits<uint64_t>::max() - digit) / 10)
      return InvalidInput("\"" + text + "\" is too large" + hint);
    value = value * 10 + digit;
    ++pos;
  }
  std::string suffix = text.substr(pos);
  int shift = 0;
  if (!suffix.empty()) {
    switch (std::toupper(static_cast<unsigned char>(suffix[0]))) {
      case 'B': shift = 0; break;
      case 'K': shift = 10; break;
      case 'M': shift = 20; break;
      case 'G': shift = 30; break;
      case 'T': shift = 40; break;
      default: return InvalidInput("\"" + text + "\" has an unknown unit" + hint);
    }
    std::string rest = suffix.substr(1);
    bool unit_ok = rest.empty() || (shift > 0 && (rest == "B" || rest == "iB" || rest == "ib"));
    if (!unit_ok || (shift == 0 && suffix.size() != 1))
      return InvalidInput("\"" + text + "\" has an unknown unit" + hint);
  }
  if (shift > 0 && value > (std::numeric_limits<uint64_t>::max() >> shift))
    return InvalidInput("\"" + text + "\" is too large" + hint);
  return value << shift;
}

Result<double> ParseSeconds(const std::string& text) {
  const std::string hint = " (expected seconds like \"60\" or \"0.5\")";
  if (text.empty()) return InvalidInput("empty duration" + hint);
  for (char c : text) {
    if (!std::isdigit(static_cast<unsigned char>(c)) && c != '.')
      return InvalidInput("\"" + text + "\" is not a duration" + hint);
  }
  char* end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || !std::isfinite(value))
    return InvalidInput("\"" + text + "\" is not a duration" + hint);
  return value;
}

std::string FormatSize(uint64_t bytes) {
  static const char* kUnits[] = {"T", "G", "M", "K"};
  static const int kShifts[] = {40, 30, 20, 10};
  for (int i = 0; i < 4; ++i) {
    uint64_t unit = uint64_t{1} << kShifts[i];
    if (bytes >= unit && bytes % unit == 0) return std::to_string(bytes / unit) + kUnits[i];
  }
  return std::to_string(bytes);
}

}  // namespace sbx
