// The Host of an HTTP/1.x request, from the first bytes a client sent on a connection.
//
// sbx-netd reads (and keeps, to forward later) the connection's first bytes and calls
// ReadHttpHost() on them after each read until the result is not kNeedMore. The head (request
// line and header fields, up to the empty line) may be at most kMaxHttpHead bytes.
// The reader refuses what lets two HTTP parsers disagree about the target host:
//   - exactly one Host field (RFC 9112 3.2), its value `host[:port]` with no userinfo ('@'),
//     no spaces, controls or delimiters;
//   - an absolute-form target (`GET http://h/ HTTP/1.1`) or a CONNECT authority whose host
//     differs from Host's, and userinfo in it;
//   - lines ended by a bare LF or containing a bare CR or NUL, obs-fold continuation lines,
//     whitespace before a field's colon, versions other than HTTP/1.0 and HTTP/1.1.
// The host is returned without its port and without IPv6 brackets, otherwise as sent: the
// caller normalizes it with the policy's rules.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sbx::netd {

inline constexpr size_t kMaxHttpHead = 8 * 1024;

enum class HttpHeadStatus {
  kNeedMore,  // no complete head yet, and fewer than kMaxHttpHead bytes
  kHost,      // a complete, well-formed head; see `host`
  kInvalid,   // not an HTTP/1.x request head, or one of the cases above
};

// A header field as sent, its value without the surrounding whitespace.
struct HttpField {
  std::string_view name;
  std::string_view value;
};

struct HttpHeadResult {
  HttpHeadStatus status = HttpHeadStatus::kNeedMore;
  std::string host;
  // kHost only, views into the bytes read: what http_request_stream.h checks per request.
  size_t head_size = 0;  // through the empty line's CRLF
  std::string_view method;
  bool http10 = false;
  std::optional<uint16_t> host_port;
  std::vector<HttpField> fields;
};

HttpHeadResult ReadHttpHost(std::string_view bytes);

// A header or trailer field line (without its CRLF) as ReadHttpHost accepts one: a token, ':',
// then a value without controls other than HTAB; no obs-fold.
bool IsHttpFieldLine(std::string_view line);

// An authority, `host[:port]` or `[v6][:port]`, split as the Host check reads it (and the
// proxy_env listener, so both read a target alike): the host without brackets, of
// [A-Za-z0-9-._~] (hex digits, ':' and '.' when bracketed), and the port when one is given
// (1 to 5 digits, at most 65535; 0 is the caller's to refuse). nullopt for anything else:
// userinfo ('@'), zone ids ('%'), spaces, an empty host or port.
struct Authority {
  std::string_view host;
  bool bracketed = false;
  std::optional<uint16_t> port;
};
std::optional<Authority> SplitAuthority(std::string_view authority);

}  // namespace sbx::netd
