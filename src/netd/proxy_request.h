// The proxy_env listener's request (netpolicy/network_proxy_env.h), as a pure function of the
// request head Beast's parser read: what the client asked for, or why it is refused.
//
// Accepted:
// - `CONNECT host:port HTTP/1.x` (authority form; host an LDH name, an IPv4 literal or a
//   bracketed IPv6 literal; the port explicit), no body, at most one Host field and, when
//   present, naming the same authority. The tunnel then goes through the same decision as a
//   captured connection (tcp_connection.h): the name by name rules, a literal by address rules.
// - An absolute-form plain-HTTP request (`GET http://host[:port]/path HTTP/1.x`): rewritten to
//   the origin form a server expects (Proxy-* and Connection fields dropped, `Connection:
//   close` set, and Host added when absent), then handled as a captured port-80 request: the
//   Host must be the URL's host, the head is checked for placeholders, and it is relayed with
//   its body. One request per client connection: the head and the Content-Length bytes of
//   body go upstream, nothing after them (a keep-alive or pipelined next request, perhaps for
//   another host, is never relayed: the client sees the connection end after the response and
//   asks again on a new one). A body framed by Transfer-Encoding is refused 411.
// Refused: https:// absolute form, userinfo, a host whose last label is a number (WHATWG
// URL's "ends in a number": an IPv4 address to a URL parser, so never a name here), a
// malformed or ambiguous request (400), any other request form (405).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <boost/beast/http/fields.hpp>
#include <boost/beast/http/message.hpp>

#include "netpolicy/network_rules.h"
#include "src/netd/http_head.h"

namespace sbx::netd {

// The largest request head the proxy reads; a longer one is refused 400 (Beast's
// header_limit). Below kMaxHttpHead, so that a rewritten plain-HTTP head (a few bytes longer
// at most) still fits what the Host check reads.
inline constexpr size_t kMaxProxyHead = kMaxHttpHead - 256;

enum class ProxyRequestKind { kRefused, kConnect, kForward };

struct ProxyRequest {
  ProxyRequestKind kind = ProxyRequestKind::kRefused;  // kRefused: `status` and `why`
  unsigned status = 400;
  std::string why;                   // the refusal page's text; never echoes the request
  std::string name;                  // a name target: normalized
  std::optional<IpAddress> address;  // an IP literal target
  uint16_t port = 0;
  // "name:port", "ip:port", "[v6]:port": the audit record's dst.
  std::string target;
  std::string head;  // kForward: the origin-form head to send upstream, CRLF CRLF included
  // kForward: the body's length (Content-Length, 0 without one). Only these bytes after the
  // head go upstream; what the client sends beyond them is never relayed.
  uint64_t body_bytes = 0;
};

ProxyRequest InterpretProxyRequest(const boost::beast::http::request_header<>& head);

}  // namespace sbx::netd
