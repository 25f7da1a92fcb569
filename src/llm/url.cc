// Splitting a base URL just enough to name its host and to print it without credentials.
#include "src/llm/url.h"

#include <algorithm>
#include <cctype>
#include <string_view>

namespace sbx::llm {
namespace {

// Where the authority ("user@host:port") starts and ends in `url`; begin == end when absent.
struct Span {
  size_t begin = 0;
  size_t end = 0;
};

Span AuthorityOf(const std::string& url) {
  size_t scheme_end = url.find("://");
  if (scheme_end == std::string::npos) return {};
  size_t begin = scheme_end + 3;
  return {begin, std::min(url.find_first_of("/?#", begin), url.size())};
}

}  // namespace

std::string UrlHostPort(const std::string& url) {
  Span authority = AuthorityOf(url);
  std::string host = url.substr(authority.begin, authority.end - authority.begin);
  if (size_t at = host.rfind('@'); at != std::string::npos) host.erase(0, at + 1);
  for (char& c : host) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return host;
}

std::string UrlForDisplay(const std::string& url) {
  std::string shown = url.substr(0, url.find_first_of("?#"));
  Span authority = AuthorityOf(shown);
  size_t at =
      std::string_view(shown).substr(authority.begin, authority.end - authority.begin).rfind('@');
  if (at != std::string::npos) shown.erase(authority.begin, at + 1);
  return shown;
}

}  // namespace sbx::llm
