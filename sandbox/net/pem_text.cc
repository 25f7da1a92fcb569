// The PEM certificate block check; see pem_text.h.
#include "sandbox/net/pem_text.h"

namespace sbx {
namespace {

constexpr std::string_view kBegin = "-----BEGIN CERTIFICATE-----";
constexpr std::string_view kEnd = "-----END CERTIFICATE-----";

bool IsBase64Char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' ||
         c == '/';
}

// The line that starts at `*at` (without its LF and a CR before it); `*at` moves past it.
std::string_view NextLine(std::string_view text, size_t* at) {
  size_t end = text.find('\n', *at);
  if (end == std::string_view::npos) end = text.size();
  std::string_view line = text.substr(*at, end - *at);
  *at = end < text.size() ? end + 1 : text.size();
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

// Whether the lines from `at` are base64 up to an END line.
bool IsBlockBody(std::string_view text, size_t at) {
  size_t base64_chars = 0;
  bool padded = false;  // '=' seen: only more '=' and the END line may follow
  while (at < text.size()) {
    const std::string_view line = NextLine(text, &at);
    if (line == kEnd) return base64_chars > 0;
    for (char c : line) {
      if (c == '=') {
        padded = true;
      } else if (padded || !IsBase64Char(c)) {
        return false;
      } else {
        ++base64_chars;
      }
    }
  }
  return false;
}

}  // namespace

bool HasPemCertificate(std::string_view text) {
  size_t at = 0;
  while (at < text.size()) {
    if (NextLine(text, &at) == kBegin && IsBlockBody(text, at)) return true;
  }
  return false;
}

}  // namespace sbx
