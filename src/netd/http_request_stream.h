// Every request on a plain-HTTP connection, checked before a byte of it goes upstream
// (docs/network.md, Deciding a connection): the sandbox's side of an allowed port-80 connection is
// parsed as a stream of HTTP/1.x requests, so a later request (keep-alive, pipelined, or hidden
// behind a framing the server reads differently) cannot reach a shared front end with another Host.
//
// Per request:
//   1. the head is held until complete (at most kMaxHttpHead bytes) and read as the first one is
//      (http_head.h: one Host, strict lines, no obs-fold, HTTP/1.0 or 1.1);
//   2. its Host is the first request's (the name the connection was allowed for), compared as
//      names are (lower case, one trailing dot ignored), with no port or the connection's port;
//   3. its framing is unambiguous (CheckRequestFraming): at most one Content-Length of digits
//      only, or Transfer-Encoding exactly "chunked" on HTTP/1.1, never both; no Upgrade (after a
//      101 nothing would be HTTP, and the response side is not parsed to see one), no
//      HTTP2-Settings, no CONNECT;
//   4. an Expect field is dropped: a server answering before the body could read the body as
//      the next request, unchecked. A client waiting for "100 Continue" sends the body after
//      its own timeout (curl: 1 s);
//   5. the body follows as framed: Content-Length bytes, or chunks whose size lines are hex
//      digits only (no extensions) and whose trailer fields are strict field lines.
// The first refused request stops the stream: neither it nor anything after it goes upstream.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "src/netd/http_head.h"

namespace sbx::netd {

enum class BodyFraming { kNone, kLength, kChunked };

struct FramingCheck {
  std::string problem;  // "" when the framing is unambiguous
  BodyFraming framing = BodyFraming::kNone;
  uint64_t length = 0;  // kLength
};

// Step 3 for a request with these fields. `allow_upgrade`: a websocket-style Upgrade is let
// through (the MITM path sees the 101 and relays raw after it); h2c and HTTP2-Settings never.
FramingCheck CheckRequestFraming(bool http10, const std::vector<HttpField>& fields,
                                 bool allow_upgrade);

class HttpRequestStream {
 public:
  // `port`: the connection's destination port, the only one a Host may name.
  explicit HttpRequestStream(uint16_t port) : port_(port) {}

  // Appends to `out` the bytes of `in` that may go upstream now: whole checked heads and body
  // bytes as they come. False once a request is refused (problem() says why); from then on
  // nothing more is appended.
  bool Feed(std::span<const uint8_t> in, std::vector<uint8_t>& out);

  const std::string& problem() const { return problem_; }
  size_t requests() const { return requests_; }  // heads let through

 private:
  enum class State { kHead, kBody, kChunkSize, kChunkData, kChunkEnd, kTrailer };

  // Consumes bytes of `in` from `at` for the current state; false on refusal.
  bool FeedHead(std::span<const uint8_t> in, size_t& at, std::vector<uint8_t>& out);
  bool FeedLine(std::span<const uint8_t> in, size_t& at, std::vector<uint8_t>& out);
  bool OnHead(std::string_view head, std::vector<uint8_t>& out);
  bool OnLine(std::string_view line, std::vector<uint8_t>& out);
  bool Refuse(std::string problem);

  const uint16_t port_;
  std::string name_;  // the first request's Host, normalized
  State state_ = State::kHead;
  std::string pending_;  // a head or a line not yet complete
  uint64_t left_ = 0;    // body or chunk bytes still to pass
  size_t trailer_bytes_ = 0;
  size_t requests_ = 0;
  std::string problem_;
};

}  // namespace sbx::netd
