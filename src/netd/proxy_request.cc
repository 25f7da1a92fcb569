// Reads a proxy request: a CONNECT target, an absolute-form URL to forward, or why it is
// refused; see proxy_request.h.
#include "src/netd/proxy_request.h"

#include <boost/beast/http/verb.hpp>

#include "base/ascii.h"
#include "src/netd/endpoint.h"
#include "src/netd/http_inject.h"

namespace sbx::netd {
namespace {

namespace http = boost::beast::http;

ProxyRequest Refused(unsigned status, std::string why) {
  ProxyRequest request;
  request.status = status;
  request.why = std::move(why);
  return request;
}

// WHATWG URL's "ends in a number": a last label of decimal digits or 0x-hex (the forms an IPv4
// part may take) makes a URL parser read the whole host as an IPv4 address ("1.2.3" is
// 1.2.0.3 there, "0x7f.1" is 127.0.0.1), never as a name. "db1", "node-2.internal" and
// "api.v2" are names.
bool EndsInANumber(std::string_view name) {
  const std::string_view last = name.substr(name.rfind('.') + 1);  // npos + 1 == 0
  if (last.empty()) return false;
  if (last.find_first_not_of("0123456789") == std::string_view::npos) return true;
  if (last.size() < 2 || last[0] != '0' || (last[1] != 'x' && last[1] != 'X')) return false;
  return last.find_first_not_of("0123456789abcdefABCDEF", 2) == std::string_view::npos;
}

constexpr const char* kNumericName =
    "sbx proxy: the host's last label is a number, so URL parsers read it as an IPv4 address "
    "in a short or hex form, which sbx does not take; write the address as four decimal parts "
    "(a.b.c.d) or use a DNS name";

// "host:port" with host a name, an IPv4 literal or "[v6]"; the port is required for CONNECT
// (RFC 9110 9.3.6), optional in a URL (`default_port`, 0: required). Anything else, userinfo
// and zone ids included, is refused 400 with `malformed`, or with kNumericName.
ProxyRequest ParseAuthority(std::string_view target, const char* malformed,
                            uint16_t default_port = 0) {
  const auto split = SplitAuthority(target);
  if (!split) return Refused(400, malformed);
  const uint16_t port = split->port.value_or(default_port);
  if (port == 0) return Refused(400, malformed);
  const std::string_view host = split->host;
  ProxyRequest request;
  request.port = port;
  if (split->bracketed) {
    auto address = IpAddress::Parse(host);
    if (!address || !address->v6) return Refused(400, malformed);
    request.address = UnwrapV4Mapped(*address);
  } else if (auto address = IpAddress::Parse(host)) {
    if (address->v6) return Refused(400, malformed);  // unbracketed IPv6 is ambiguous
    request.address = *address;
  } else {
    auto name = NormalizeHostName(host);
    if (!name) return Refused(400, malformed);
    // "1.2.3", "10.0.0.010" or "0x7f.1": what a URL parser takes for an address (or rejects),
    // never a name to resolve; curl and browsers would not send it as one either.
    if (EndsInANumber(*name)) return Refused(400, kNumericName);
    request.name = *name;
  }
  request.target = request.address ? EndpointToString({*request.address, port})
                                   : request.name + ":" + std::to_string(port);
  return request;
}

std::optional<uint64_t> ParseContentLength(std::string_view text) {
  if (text.empty() || text.size() > 18) return std::nullopt;  // 18 digits cannot overflow
  uint64_t length = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    length = length * 10 + static_cast<uint64_t>(c - '0');
  }
  return length;
}

// Fields a proxy consumes or that concern only the client's connection to it.
bool IsHopByHop(std::string_view name) {
  return StartsWithIgnoreAsciiCase(name, "proxy-") || EqualsIgnoreAsciiCase(name, "connection") ||
         EqualsIgnoreAsciiCase(name, "keep-alive");
}

// `GET http://host[:port]/path?query` -> the request for the origin server.
ProxyRequest InterpretForward(const http::request_header<>& head) {
  const std::string_view target = ToStd(head.target());
  const std::string_view rest = target.substr(7);  // after "http://"
  const size_t end = rest.find_first_of("/?#");
  const std::string_view authority = rest.substr(0, end);
  auto request = ParseAuthority(authority, "sbx proxy: the URL needs a host name or address", 80);
  if (!request.why.empty()) return request;
  if (head.count(http::field::host) > 1) return Refused(400, "sbx proxy: more than one Host field");
  // Exactly one request goes upstream: its head and the body its Content-Length declares.
  // A chunked body would need re-framing to find where it ends; refused rather than relayed
  // raw, which would let the bytes after it reach the server unchecked.
  if (head.count(http::field::transfer_encoding) != 0) {
    return Refused(411,
                   "sbx proxy: a request body needs a Content-Length; Transfer-Encoding "
                   "(chunked) is not forwarded");
  }
  if (head.count(http::field::content_length) > 1) {
    return Refused(400, "sbx proxy: more than one Content-Length field");
  }
  if (head.count(http::field::content_length) == 1) {
    auto length = ParseContentLength(ToStd(head[http::field::content_length]));
    if (!length) return Refused(400, "sbx proxy: Content-Length is not a decimal byte count");
    request.body_bytes = *length;
  }
  std::string path(end == std::string_view::npos ? "/" : rest.substr(end));
  if (path[0] != '/') path.insert(0, "/");
  request.kind = ProxyRequestKind::kForward;
  std::string& out = request.head;
  out.append(ToStd(head.method_string())).append(" ").append(path);
  out.append(head.version() == 10 ? " HTTP/1.0\r\n" : " HTTP/1.1\r\n");
  if (head.count(http::field::host) == 0) out.append("Host: ").append(authority).append("\r\n");
  for (const auto& field : head) {
    if (IsHopByHop(ToStd(field.name_string()))) continue;
    out.append(ToStd(field.name_string())).append(": ");
    out.append(ToStd(field.value())).append("\r\n");
  }
  out.append("Connection: close\r\n\r\n");
  return request;
}

}  // namespace

ProxyRequest InterpretProxyRequest(const http::request_header<>& head) {
  if (head.version() != 10 && head.version() != 11)
    return Refused(400, "sbx proxy: HTTP/1.0 or 1.1 only");
  if (head.method() != http::verb::connect) {
    const std::string_view target = ToStd(head.target());
    if (StartsWithIgnoreAsciiCase(target, "http://")) return InterpretForward(head);
    if (StartsWithIgnoreAsciiCase(target, "https://"))
      return Refused(400, "sbx proxy: https:// goes through CONNECT");
    return Refused(405, "sbx proxy: CONNECT or an absolute http:// URL only");
  }
  auto request = ParseAuthority(ToStd(head.target()), "sbx proxy: CONNECT needs host:port");
  if (!request.why.empty()) return request;
  request.kind = ProxyRequestKind::kConnect;
  // A body would be tunnelled bytes in disguise; CONNECT has none (RFC 9110 9.3.6).
  if (head.count(http::field::content_length) != 0 ||
      head.count(http::field::transfer_encoding) != 0) {
    return Refused(400, "sbx proxy: CONNECT carries no body");
  }
  const size_t hosts = head.count(http::field::host);
  if (hosts > 1) return Refused(400, "sbx proxy: more than one Host field");
  if (hosts == 1 && !EqualsIgnoreAsciiCase(ToStd(head[http::field::host]), ToStd(head.target()))) {
    return Refused(400, "sbx proxy: Host differs from the CONNECT target");
  }
  return request;
}

}  // namespace sbx::netd
