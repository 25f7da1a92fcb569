// The `host[:ports]` grammar of network rules, and host-name normalization.
#include "netpolicy/network_rules.h"

#include <algorithm>
#include <cstdio>

#include "base/ascii.h"
#include "netpolicy/network_rules_internal.h"

namespace sbx {
namespace {

constexpr size_t kMaxEntryBytes = 1024;
constexpr size_t kMaxLabelBytes = 63;
constexpr size_t kMaxNameBytes = 253;

// The entry as a message can show it: printable ASCII kept, any other byte as \xNN.
std::string Quote(std::string_view text) {
  std::string quoted = "\"";
  for (char c : text) {
    auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte < 0x7f && c != '"' && c != '\\') {
      quoted += c;
    } else {
      char escaped[8];
      std::snprintf(escaped, sizeof(escaped), "\\x%02x", byte);
      quoted += escaped;
    }
  }
  return quoted + "\"";
}

bool IsNameByte(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

// Why `name` (lower case, no trailing dot) is not a valid host name; "" when it is.
std::string NameProblem(std::string_view name) {
  if (name.empty()) return "no host name";
  if (name.size() > kMaxNameBytes) {
    return "the name is " + std::to_string(name.size()) + " bytes; at most 253 are allowed";
  }
  size_t start = 0;
  while (start <= name.size()) {
    size_t end = std::min(name.find('.', start), name.size());
    std::string_view label = name.substr(start, end - start);
    if (label.empty()) return "an empty label (two dots in a row, or a leading dot)";
    if (label.size() > kMaxLabelBytes) {
      return "the label \"" + std::string(label.substr(0, 16)) + "...\" is " +
             std::to_string(label.size()) + " bytes; at most 63 are allowed";
    }
    for (char c : label) {
      if (!IsNameByte(c)) {
        return std::string("'") + c +
               "' is not allowed in a host name; use letters, digits, '-' and '_'";
      }
    }
    start = end + 1;
  }
  return "";
}

bool LastLabelIsNumeric(std::string_view name) {
  std::string_view last = name.substr(name.rfind('.') + 1);  // npos + 1 == 0
  return std::all_of(last.begin(), last.end(), [](char c) { return c >= '0' && c <= '9'; });
}

size_t LabelCount(std::string_view name) { return std::count(name.begin(), name.end(), '.') + 1; }

// Digits only, at most `max_digits` of them; nullopt otherwise.
std::optional<unsigned> ParseNumber(std::string_view text, size_t max_digits) {
  if (text.empty() || text.size() > max_digits) return std::nullopt;
  unsigned value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + static_cast<unsigned>(c - '0');
  }
  return value;
}

// Parses the part after ':' ("443", "22,443", "8000-8100", "*"); returns what is wrong or "".
std::string ParsePorts(std::string_view text, PortSet& ports) {
  if (text.empty()) return "nothing after ':'; write a port like 443, or leave out the ':'";
  if (text == "*") {
    ports.any = true;
    return "";
  }
  auto port = [](std::string_view item, uint16_t& out) -> std::string {
    auto number = ParseNumber(item, 5);
    if (!number)
      return "\"" + std::string(item) + "\" is not a port number; write 443, 22,443 or 8000-8100";
    if (*number == 0 || *number > 65535)
      return "port " + std::to_string(*number) + " is out of range; use 1 to 65535";
    out = static_cast<uint16_t>(*number);
    return "";
  };
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = std::min(text.find(',', start), text.size());
    std::string_view item = text.substr(start, end - start);
    size_t dash = item.find('-');
    PortRange range;
    std::string problem = port(item.substr(0, dash), range.first);
    range.last = range.first;
    if (problem.empty() && dash != std::string_view::npos)
      problem = port(item.substr(dash + 1), range.last);
    if (!problem.empty()) return problem;
    if (range.first > range.last) {
      return "the range " + std::string(item) + " is reversed; write " +
             std::to_string(range.last) + "-" + std::to_string(range.first);
    }
    ports.ranges.push_back(range);
    start = end + 1;
  }
  return "";
}

// An address rule: "203.0.113.7", "203.0.113.0/24", and (brackets removed) "2001:db8::/32".
std::string ParseAddress(std::string_view host, bool bracketed, NetworkRule& rule) {
  size_t slash = host.find('/');
  auto address = IpAddress::Parse(host.substr(0, slash));
  if (!address) return bracketed ? "not an IPv6 address inside the brackets" : "not an IP address";
  if (bracketed != address->v6) {
    return bracketed ? "brackets are for IPv6 addresses; write the IPv4 address without them"
                     : "IPv6 addresses go in brackets, with the port after: [2001:db8::1]:443";
  }
  const int max_length = address->v6 ? 128 : 32;
  int length = max_length;
  if (slash != std::string_view::npos) {
    auto parsed = ParseNumber(host.substr(slash + 1), 3);
    if (!parsed || static_cast<int>(*parsed) > max_length) {
      return "the prefix length /" + std::string(host.substr(slash + 1)) + " is not in 0.." +
             std::to_string(max_length);
    }
    length = static_cast<int>(*parsed);
  }
  IpAddress network = network_internal::Masked(*address, length);
  if (!(network == *address)) {
    return "host bits are set below /" + std::to_string(length) + "; write " +
           (address->v6 ? "[" + network.ToString() + "/" + std::to_string(length) + "]"
                        : network.ToString() + "/" + std::to_string(length));
  }
  // ::ffff:a.b.c.d is how a dual-stack socket reports IPv4 peers; matching unwraps it, so the
  // rule must be the IPv4 one to ever match.
  IpAddress unwrapped = network_internal::UnwrapV4Mapped(network);
  if (network.v6 && !unwrapped.v6 && length >= 96) {
    network = unwrapped;
    length -= 96;
  }
  rule.kind = HostPatternKind::kAddress;
  rule.address = network;
  rule.prefix_length = length;
  return "";
}

// An exact name or "*.suffix".
std::string ParseName(std::string_view host, NetworkRule& rule) {
  std::string name = AsciiLower(host);
  if (!name.empty() && name.back() == '.') name.pop_back();
  rule.kind = HostPatternKind::kExactName;
  if (name.find('*') != std::string::npos) {
    if (name == "*") return "\"*\" would allow every host; list the hosts instead";
    if (name.rfind("*.", 0) != 0 || name.find('*', 1) != std::string::npos) {
      return "a wildcard may only be the whole first label, as in \"*.example.com\"";
    }
    name.erase(0, 2);
    rule.kind = HostPatternKind::kSuffix;
  }
  if (std::string problem = NameProblem(name); !problem.empty()) return problem;
  if (LastLabelIsNumeric(name)) {
    return "looks like an IP address but is not one; write four numbers 0-255, like 203.0.113.7";
  }
  if (rule.kind == HostPatternKind::kSuffix && LabelCount(name) < 2) {
    return "a wildcard needs at least two labels after \"*.\" (\"*.example.com\", not \"*.com\")";
  }
  rule.name = name;
  return "";
}

// Splits "host[:ports]" / "[v6]:ports"; returns what is wrong or "".
std::string SplitHostPorts(std::string_view entry, std::string_view& host,
                           std::optional<std::string_view>& ports, bool& bracketed) {
  bracketed = entry.front() == '[';
  std::string_view rest;
  if (bracketed) {
    size_t close = entry.find(']');
    if (close == std::string_view::npos)
      return "missing ']'; write [2001:db8::1] or [2001:db8::1]:443";
    host = entry.substr(1, close - 1);
    rest = entry.substr(close + 1);
    if (!rest.empty() && rest.front() != ':')
      return "unexpected text after ']'; write [2001:db8::1]:443";
  } else {
    size_t colons = std::count(entry.begin(), entry.end(), ':');
    if (colons > 1) return "IPv6 addresses go in brackets, with the port after: [2001:db8::1]:443";
    size_t colon = entry.find(':');
    host = entry.substr(0, colon);
    rest = colon == std::string_view::npos ? std::string_view() : entry.substr(colon);
  }
  if (!rest.empty()) ports = rest.substr(1);
  if (host.empty()) return "no host before the port; write a host like \"pypi.org:443\"";
  return "";
}

// Rejections that need the whole entry: size, bytes, URLs, userinfo.
std::string EntryProblem(std::string_view entry) {
  if (entry.empty()) return "empty; write a host like \"pypi.org\" or \"pypi.org:443\"";
  if (entry.size() > kMaxEntryBytes) return "longer than 1024 bytes";
  for (char c : entry) {
    auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x80)
      return "not ASCII; write an internationalized name in its punycode form (xn--...)";
    if (byte <= 0x20 || byte == 0x7f) return "contains a space or a control character";
  }
  if (entry.find("://") != std::string_view::npos)
    return "a URL; write the host and port only, like \"example.com:443\"";
  if (entry.find('@') != std::string_view::npos) return "user@ is not allowed; write the host only";
  return "";
}

}  // namespace

Result<NetworkRule> ParseNetworkRule(std::string_view entry, const std::string& field,
                                     DefaultPorts default_ports) {
  auto fail = [&](const std::string& what) {
    return InvalidInput(field + ": " + Quote(entry) + ": " + what);
  };
  if (std::string problem = EntryProblem(entry); !problem.empty()) return fail(problem);
  std::string_view host;
  std::optional<std::string_view> ports;
  bool bracketed = false;
  if (std::string problem = SplitHostPorts(entry, host, ports, bracketed); !problem.empty())
    return fail(problem);

  NetworkRule rule;
  rule.text = std::string(entry);
  std::string problem;
  if (bracketed || IpAddress::Parse(host.substr(0, host.find('/')))) {
    problem = ParseAddress(host, bracketed, rule);
  } else if (host.find('/') != std::string_view::npos) {
    problem = "a path is not allowed; write the host only, like \"example.com\"";
  } else {
    problem = ParseName(host, rule);
  }
  if (problem.empty() && ports) problem = ParsePorts(*ports, rule.ports);
  if (!problem.empty()) return fail(problem);
  if (!ports && default_ports == DefaultPorts::kAll) rule.ports.any = true;
  if (!ports && default_ports == DefaultPorts::kHttps) rule.ports.ranges.push_back({443, 443});
  return rule;
}

std::optional<std::string> NormalizeHostName(std::string_view name) {
  std::string lower = AsciiLower(name);
  if (!lower.empty() && lower.back() == '.') lower.pop_back();
  if (!NameProblem(lower).empty()) return std::nullopt;
  return lower;
}

}  // namespace sbx
