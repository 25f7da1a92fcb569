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

namespace sbx::netd {

inline constexpr size_t kMaxHttpHead = 8 * 1024;

enum class HttpHeadStatus {
  kNeedMore,  // no complete head yet, and fewer than kMaxHttpHead bytes
  kHost,      // a complete, well-formed head; see `host`
  kInvalid,   // not an HTTP/1.x request head, or one of the cases above
};

struct HttpHeadResult {
  HttpHeadStatus status = HttpHeadStatus::kNeedMore;
  std::string host;
};

HttpHeadResult ReadHttpHost(std::string_view bytes);

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
