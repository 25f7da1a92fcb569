// The byte relay of an allowed connection: the sandbox's socket <-> the upstream socket, both
// ways at once, until both sides have finished or the relay is cut.
//
// - 64 KiB per direction; a direction reads again only when its last chunk has been written, so
//   a slow reader slows its writer down instead of filling netd's memory.
// - Half-close aware: end of stream from one side becomes shutdown(SHUT_WR) towards the other,
//   and the other direction keeps flowing (HTTP/1.0 clients, `nc -q`).
// - Cut, with a reset towards both sides, on an error in either direction, after
//   idle_timeout_seconds without a byte either way, when the run's egress_bytes_max would be
//   exceeded, and when netd stops.
// Bytes are counted into the run's counters as they are relayed.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include "src/netd/netd_context.h"

namespace sbx::netd {

enum class RelayEnd { kFin, kReset, kIdle, kLimitBytes, kStop };
const char* RelayEndName(RelayEnd end);  // "fin", "reset", "idle", "limit_bytes", "stop"

inline constexpr size_t kRelayBufferBytes = 64 * 1024;

class Relay {
 public:
  // Both sockets are borrowed and must outlive the relay; `owner` (the connection holding
  // them) is kept alive by every pending operation.
  Relay(boost::asio::ip::tcp::socket& client, boost::asio::ip::tcp::socket& upstream,
        NetdContext& context);

  // Sends `first_bytes` (what was read before deciding) upstream, then relays. `done` runs
  // once, after both sockets are closed.
  void Start(std::vector<uint8_t> first_bytes, std::shared_ptr<void> owner,
             std::function<void(RelayEnd)> done);
  void Cut(RelayEnd end);

  uint64_t bytes_up() const { return up_.bytes; }
  uint64_t bytes_down() const { return down_.bytes; }

 private:
  struct Direction {
    boost::asio::ip::tcp::socket& from;
    boost::asio::ip::tcp::socket& to;
    bool upstream_bound;  // sandbox -> upstream: counted against egress_bytes_max
    std::vector<uint8_t> buffer;
    uint64_t bytes = 0;
    bool finished = false;
  };

  void Read(Direction& direction);
  void Write(Direction& direction, size_t size);
  void OnEndOfStream(Direction& direction);
  void WatchIdle();
  void Finish(RelayEnd end, bool reset);

  Direction up_;
  Direction down_;
  NetdContext& context_;
  boost::asio::steady_timer idle_timer_;
  std::chrono::steady_clock::time_point last_activity_;
  std::chrono::steady_clock::duration idle_timeout_;
  std::shared_ptr<void> owner_;
  std::function<void(RelayEnd)> done_;
  bool finished_ = false;
};

// Closes `socket` so the peer sees a reset (SO_LINGER 0), not an orderly end of stream.
void ResetAndClose(boost::asio::ip::tcp::socket& socket);

}  // namespace sbx::netd
