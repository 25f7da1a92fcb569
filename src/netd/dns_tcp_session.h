// DNS over TCP (RFC 7766) on port 53 of any address the sandbox dials: the same stub as UDP
// (dns_responder.h, answered from policy, never forwarded), framed with a two-byte length.
// Resolvers fall back to TCP when told to (glibc's `options use-vc`, `dig +tcp`) or when an
// answer is truncated; without this they would get a reset and report an outage.
//
// One session per connection: queries are answered in order, at most kDnsTcpMaxQueries of
// them (then a clean end: further queries are read and dropped, never answered), each within
// kDnsTcpIdleSeconds of the previous answer; a query longer than the stub accepts over UDP,
// one it would drop unanswered, or a stalled client ends the session with a reset. Each query
// is logged and counted as a UDP one is.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include "src/netd/netd_context.h"

namespace sbx::netd {

inline constexpr int kDnsTcpMaxQueries = 64;
// Sessions open at once; more are reset (a resolver needs one or two; each holds a descriptor
// of netd's, which the run's relayed connections need).
inline constexpr size_t kDnsTcpMaxSessions = 16;
inline constexpr double kDnsTcpIdleSeconds = 10.0;

class DnsTcpSession : public std::enable_shared_from_this<DnsTcpSession> {
 public:
  // `on_closed` runs once, when the socket is closed.
  DnsTcpSession(NetdContext& context, boost::asio::ip::tcp::socket client,
                std::function<void(DnsTcpSession*)> on_closed);

  void Start() { ReadLength(); }
  // netd is stopping: the session ends now.
  void Stop() { Close(true); }

 private:
  void ReadLength();
  void ReadQuery(size_t length);
  void Answer();
  // Arms the timer that ends a session whose client sends nothing for kDnsTcpIdleSeconds.
  void ExpectBytes();
  // The last query answered: a graceful end (see the .cc).
  void EndAfterAnswers();
  void DiscardUntilEnd();
  // With a reset, unless the client ended cleanly.
  void Close(bool reset);

  NetdContext& context_;
  boost::asio::ip::tcp::socket client_;
  boost::asio::steady_timer idle_;
  std::function<void(DnsTcpSession*)> on_closed_;
  std::array<uint8_t, 2> length_{};
  std::vector<uint8_t> query_;
  std::vector<uint8_t> reply_;  // length-prefixed, alive until written
  std::array<uint8_t, 512> discard_{};
  int answered_ = 0;
  bool closed_ = false;
};

}  // namespace sbx::netd
