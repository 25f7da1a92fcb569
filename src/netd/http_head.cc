// Reads an HTTP/1.x request head line by line and extracts its one Host.
#include "src/netd/http_head.h"

#include "base/ascii.h"

namespace sbx::netd {
namespace {

// Real requests carry a few dozen fields; the bound keeps re-reading the head after each line
// cheap.
constexpr size_t kMaxFields = 100;

HttpHeadResult Invalid() {
  HttpHeadResult result;
  result.status = HttpHeadStatus::kInvalid;
  return result;
}

bool IsTchar(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  switch (c) {
    case '!':
    case '#':
    case '$':
    case '%':
    case '&':
    case '\'':
    case '*':
    case '+':
    case '-':
    case '.':
    case '^':
    case '_':
    case '`':
    case '|':
    case '~':
      return true;
    default:
      return false;
  }
}

bool IsToken(std::string_view text) {
  if (text.empty()) return false;
  for (char c : text) {
    if (!IsTchar(c)) return false;
  }
  return true;
}

bool IsHostChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '.' || c == '_' || c == '~';
}


// The Host's or target's host, without port and brackets, or nullopt.
std::optional<std::string> ParseAuthority(std::string_view authority) {
  auto split = SplitAuthority(authority);
  if (!split) return std::nullopt;
  return std::string(split->host);
}

struct RequestLine {
  std::string_view method;
  std::string_view target;
  bool http10 = false;
};

std::optional<RequestLine> ParseRequestLine(std::string_view line) {
  const size_t first = line.find(' ');
  if (first == std::string_view::npos) return std::nullopt;
  const size_t second = line.find(' ', first + 1);
  if (second == std::string_view::npos) return std::nullopt;
  RequestLine request{line.substr(0, first), line.substr(first + 1, second - first - 1)};
  const std::string_view version = line.substr(second + 1);
  if (!IsToken(request.method) || request.target.empty()) return std::nullopt;
  for (char c : request.target) {
    if (c <= 0x20 || c >= 0x7f) return std::nullopt;
  }
  if (version != "HTTP/1.1" && version != "HTTP/1.0") return std::nullopt;
  request.http10 = version == "HTTP/1.0";
  return request;
}

// What an absolute-form target names: its host, and its port with the scheme's default.
struct TargetAuthority {
  std::string host;  // "" for origin-form and "*"
  uint16_t port = 0;
  uint16_t default_port = 0;  // what a Host without a port means for this target
};

// The host and port the request target names; nullopt when malformed.
std::optional<TargetAuthority> TargetHost(const RequestLine& request) {
  const std::string_view target = request.target;
  if (target.front() == '/' || target == "*") return TargetAuthority{};
  if (request.method == "CONNECT") {
    auto host = ParseAuthority(target);
    if (!host) return std::nullopt;
    return TargetAuthority{*host, 0, 0};
  }
  const size_t scheme_end = target.find("://");
  if (scheme_end == std::string_view::npos) return std::nullopt;
  const std::string_view scheme = target.substr(0, scheme_end);
  const bool https = EqualsIgnoreAsciiCase(scheme, "https");
  if (!EqualsIgnoreAsciiCase(scheme, "http") && !https) return std::nullopt;
  std::string_view authority = target.substr(scheme_end + 3);
  authority = authority.substr(0, authority.find_first_of("/?#"));
  auto split = SplitAuthority(authority);
  if (!split || split->host.empty()) return std::nullopt;
  const uint16_t default_port = https ? 443 : 80;
  return TargetAuthority{std::string(split->host), split->port.value_or(default_port),
                         default_port};
}

// A field line `name: value`; sets `field` (the value OWS trimmed).
bool ParseField(std::string_view line, HttpField& field) {
  if (line.empty() || line.front() == ' ' || line.front() == '\t') return false;  // obs-fold
  const size_t colon = line.find(':');
  if (colon == std::string_view::npos || !IsToken(line.substr(0, colon))) return false;
  field.name = line.substr(0, colon);
  std::string_view value = line.substr(colon + 1);
  for (char c : value) {
    const unsigned char u = static_cast<unsigned char>(c);
    if ((u < 0x20 && c != '\t') || u == 0x7f) return false;
  }
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
  field.value = value;
  return true;
}

}  // namespace

HttpHeadResult ReadHttpHost(std::string_view bytes) {
  if (bytes.size() > kMaxHttpHead) bytes = bytes.substr(0, kMaxHttpHead);
  std::optional<RequestLine> request;
  std::optional<std::string> host;
  HttpHeadResult result;
  size_t at = 0;
  size_t fields = 0;
  // Every complete line is checked as soon as it is there, so a client speaking some other
  // protocol is refused at its first line rather than after kMaxHttpHead bytes.
  while (true) {
    const size_t lf = bytes.find('\n', at);
    const std::string_view partial =
        bytes.substr(at, lf == std::string_view::npos ? bytes.npos : lf - at);
    for (size_t i = 0; i < partial.size(); ++i) {
      const char c = partial[i];
      if (c == '\0') return Invalid();
      if (c == '\r' && i + 1 < partial.size()) return Invalid();  // bare CR
    }
    if (!request && partial.size() > 0 && !IsTchar(partial.front())) return Invalid();
    if (lf == std::string_view::npos) break;
    if (partial.empty() || partial.back() != '\r') return Invalid();  // bare LF
    const std::string_view line = partial.substr(0, partial.size() - 1);
    at = lf + 1;
    if (!request) {
      request = ParseRequestLine(line);
      if (!request) return Invalid();
      continue;
    }
    if (line.empty()) {
      if (!host) return Invalid();  // HTTP/1.0 without Host: nothing to check it against
      auto target = TargetHost(*request);
      if (!target) return Invalid();
      if (!target->host.empty() && !EqualsIgnoreAsciiCase(target->host, *host)) return Invalid();
      // A server honouring an absolute-form target routes by it, port included: it must be
      // the port the Host names (a Host without one means the scheme's default).
      if (target->port != 0 && target->port != result.host_port.value_or(target->default_port)) {
        return Invalid();
      }
      result.status = HttpHeadStatus::kHost;
      result.host = std::move(*host);
      result.head_size = at;
      result.method = request->method;
      result.http10 = request->http10;
      return result;
    }
    if (++fields > kMaxFields) return Invalid();
    HttpField field;
    if (!ParseField(line, field)) return Invalid();
    if (EqualsIgnoreAsciiCase(field.name, "host")) {
      if (host) return Invalid();  // a second Host
      auto authority = SplitAuthority(field.value);
      if (!authority) return Invalid();
      host = std::string(authority->host);
      result.host_port = authority->port;
    }
    result.fields.push_back(field);
  }
  if (bytes.size() >= kMaxHttpHead) return Invalid();
  return HttpHeadResult();
}

bool IsHttpFieldLine(std::string_view line) {
  HttpField field;
  return line.find('\r') == std::string_view::npos && ParseField(line, field);
}

std::optional<Authority> SplitAuthority(std::string_view authority) {
  Authority split;
  std::string_view rest;
  if (!authority.empty() && authority.front() == '[') {
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    split.host = authority.substr(1, close - 1);
    split.bracketed = true;
    rest = authority.substr(close + 1);
    for (char c : split.host) {
      const bool hex = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
      if (!hex && c != ':' && c != '.') return std::nullopt;
    }
  } else {
    const size_t colon = authority.find(':');
    split.host = authority.substr(0, colon);
    rest = colon == std::string_view::npos ? std::string_view() : authority.substr(colon);
    for (char c : split.host) {
      if (!IsHostChar(c)) return std::nullopt;  // '@' (userinfo), '%', spaces, controls
    }
  }
  if (split.host.empty()) return std::nullopt;
  if (!rest.empty()) {
    if (rest.front() != ':' || rest.size() < 2 || rest.size() > 6) return std::nullopt;
    unsigned port = 0;
    for (char c : rest.substr(1)) {
      if (c < '0' || c > '9') return std::nullopt;
      port = port * 10 + static_cast<unsigned>(c - '0');
    }
    if (port > 65535) return std::nullopt;
    split.port = static_cast<uint16_t>(port);
  }
  return split;
}

}  // namespace sbx::netd
