// One connection to an inject host on the MITM path (docs/network.md, TLS termination), from the
// allowed, connected TCP pair to close:
//   1. TLS to the pinned upstream address: SNI and host-name verification for the name, the
//      peer verified against the host's store plus the policy's upstream CAs, ALPN http/1.1.
//   2. TLS with the sandbox, presenting the run CA's leaf for the name (the ClientHello read
//      for the SNI check is replayed into it).
//   3. Upstream TLS failed: the sandbox's first request is answered 502 (the body says why),
//      nothing is sent upstream, the connection ends denied tls_verify_failed/upstream_error.
//   4. Else per HTTP/1.1 request (Beast parsers, 64 KiB heads): http_inject.h decides and sets
//      the headers; a refusal is a 403 that names the reason, and ends the connection. Bodies
//      stream both ways; keep-alive continues; 101 Switching Protocols turns into a raw relay.
// Bytes count toward the run's egress limit and counters; idle_timeout cuts the connection.
// Every request gets an ev:"http" audit record.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>  // Boost 1.74's awaitable.hpp uses std::exchange without including it
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/parser.hpp>

#include "src/netd/mitm_context.h"
#include "src/netd/netd_context.h"
#include "src/netd/prefixed_socket.h"
#include "src/netd/relay.h"

namespace sbx::netd {

// The largest request or response head (request line or status line and fields) accepted.
inline constexpr size_t kMaxMitmHead = 64 * 1024;

struct MitmOutcome {
  bool allowed = true;  // false: the upstream TLS failed and nothing was forwarded
  std::string reason;   // denied: tls_verify_failed / upstream_error; allowed: why it was cut
  RelayEnd end = RelayEnd::kFin;
};

class MitmSession : public std::enable_shared_from_this<MitmSession> {
 public:
  // `name` is normalized; `server` presents its leaf. The sockets are connected.
  MitmSession(NetdContext& context, MitmContext& mitm, boost::asio::ip::tcp::socket client,
              boost::asio::ip::tcp::socket upstream, std::vector<uint8_t> first_bytes,
              std::string name, boost::asio::ssl::context& server);

  // `done` runs once, after both sockets are closed.
  void Start(std::function<void(const MitmOutcome&)> done);
  // Ends the connection now with `end` (idle, limit_bytes, stop), resetting both sides.
  void Cut(RelayEnd end);

  uint64_t bytes_up() const { return bytes_up_; }
  uint64_t bytes_down() const { return bytes_down_; }

 private:
  using TlsStream = boost::asio::ssl::stream<PrefixedSocket>;
  template <bool IsRequest>
  using Parser = boost::beast::http::parser<IsRequest, boost::beast::http::buffer_body>;

  // mitm_session.cc: the order, the handshakes, the ending.
  boost::asio::awaitable<void> Run();
  boost::asio::awaitable<void> HandshakeUpstream();
  boost::asio::awaitable<void> AnswerUpstreamFailure();
  boost::asio::awaitable<void> Respond(unsigned status, std::string text);
  void WatchIdle();
  void Touch() { last_activity_ = std::chrono::steady_clock::now(); }
  // Throws operation_aborted (after Cut(kLimitBytes)) if `size` more bytes up would pass it.
  void ChargeEgress(uint64_t size);
  void Count(bool upstream_bound, uint64_t size);
  void Finish();

  // mitm_http.cc: requests, bodies, upgrades.
  boost::asio::awaitable<bool> Exchange();  // false: the connection ends after it
  template <bool IsRequest>
  boost::asio::awaitable<void> Forward(Parser<IsRequest>& parser, TlsStream& from,
                                       boost::beast::flat_buffer& from_buffer, TlsStream& to);
  boost::asio::awaitable<void> Tunnel();
  boost::asio::awaitable<void> Pump(TlsStream& from, boost::beast::flat_buffer& pending,
                                    TlsStream& to);

  NetdContext& context_;
  MitmContext& mitm_;
  std::string name_;
  TlsStream client_;
  TlsStream upstream_;
  boost::beast::flat_buffer client_buffer_;
  boost::beast::flat_buffer upstream_buffer_;
  std::vector<char> chunk_;  // one message body chunk at a time (requests and responses alternate)
  boost::asio::steady_timer idle_timer_;
  std::chrono::steady_clock::time_point last_activity_;
  std::chrono::steady_clock::duration idle_timeout_;
  std::function<void(const MitmOutcome&)> done_;
  MitmOutcome outcome_;
  std::string upstream_failure_;  // the 502 page's reason, "" when the upstream TLS is up
  bool cut_ = false;
  bool finished_ = false;
  uint64_t bytes_up_ = 0;
  uint64_t bytes_down_ = 0;
};

}  // namespace sbx::netd
