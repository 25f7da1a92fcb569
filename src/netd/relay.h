// The byte relay of an allowed connection: the sandbox's socket <-> the upstream socket, both
// ways at once, until both sides have finished or the relay is cut.
//
// - In the kernel: per direction a pipe, socket -> pipe -> socket with splice(2), so relayed
//   bytes are never copied into netd. Asio only says when a socket is ready (async_wait); the
//   sockets are non-blocking and the splices are made here.
// - A direction reads whenever its pipe may have room, also while the receiver is not taking
//   bytes (the sender's window stays open). With bytes in the pipe and neither side moving, it
//   waits for the receiver; with none, for the sender. The pipe is bounded, so a slow reader
//   still slows its writer down. Pipes start at the kernel's default size; a direction
//   that fills its pipe grows it to kRelayPipeBytes (best effort: pipe pages are accounted to
//   netd's uid, shared by every run).
// - Half-close aware: end of stream from one side becomes shutdown(SHUT_WR) towards the other,
//   and the other direction keeps flowing (HTTP/1.0 clients, `nc -q`).
// - Cut, with a reset towards both sides, on an error in either direction, after
//   idle_timeout_seconds without a byte either way, and when netd stops.
// - The run's egress_bytes_max: the sandbox's bytes go upstream up to the budget left, not
//   one more; when the sandbox has more to send, the upstream gets an end of stream after the
//   bytes that fit and the sandbox's side a reset (limit_bytes).
// Bytes are counted into the run's counters as they enter a pipe.
// netd must ignore SIGPIPE: splice(2) to a socket has no MSG_NOSIGNAL.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "base/unique_fd.h"
#include "src/netd/netd_context.h"

namespace sbx::netd {

enum class RelayEnd { kFin, kReset, kIdle, kLimitBytes, kStop };
const char* RelayEndName(RelayEnd end);  // "fin", "reset", "idle", "limit_bytes", "stop"

// What a direction's pipe grows to once it has been filled: larger splices, fewer wake-ups.
inline constexpr int kRelayPipeBytes = 1024 * 1024;

class Relay {
 public:
  // Both sockets are borrowed and must outlive the relay; `owner` (the connection holding
  // them) is kept alive by every pending operation.
  Relay(boost::asio::ip::tcp::socket& client, boost::asio::ip::tcp::socket& upstream,
        NetdContext& context);

  // Before Start: after the first bytes, at most `bytes` more go upstream (a forwarded proxy
  // request's body). Past them the sandbox's bytes are read and dropped, never relayed, and
  // the relay ends once the upstream has ended.
  void LimitUpstream(uint64_t bytes) { up_.left = bytes; }

  // Before Start: the sandbox's bytes are read into netd (recv/send, no splice; the other
  // direction stays spliced) and only what `filter` appends to `out` goes upstream. Once it
  // returns false the sandbox is read no more, the upstream gets end of stream after what was
  // let through, the upstream's answers still reach the sandbox, and the relay ends (done) with
  // refused() true and the sandbox's socket left open for a refusal page (relay_filter.cc).
  using UpstreamFilter =
      std::function<bool(std::span<const uint8_t> in, std::vector<uint8_t>& out)>;
  void FilterUpstream(UpstreamFilter filter) { filter_ = std::move(filter); }
  bool refused() const { return refused_; }

  // Sends `first_bytes` (what was read before deciding) upstream, then relays. `done` runs
  // once, after both sockets are closed.
  void Start(std::vector<uint8_t> first_bytes, std::shared_ptr<void> owner,
             std::function<void(RelayEnd)> done);
  void Cut(RelayEnd end);

  uint64_t bytes_up() const { return up_.bytes; }
  uint64_t bytes_down() const { return down_.bytes; }

 private:
  struct Direction {
    Direction(boost::asio::ip::tcp::socket& from_socket, boost::asio::ip::tcp::socket& to_socket,
              bool to_upstream)
        : from(from_socket), to(to_socket), upstream_bound(to_upstream) {}
    boost::asio::ip::tcp::socket& from;
    boost::asio::ip::tcp::socket& to;
    bool upstream_bound;  // sandbox -> upstream: counted against egress_bytes_max
    UniqueFd pipe_out;    // read end
    UniqueFd pipe_in;     // write end
    size_t in_pipe = 0;   // spliced in, not yet spliced out
    uint64_t bytes = 0;
    bool end_of_stream = false;  // the sender has finished; the pipe may still hold bytes
    bool finished = false;
    std::optional<uint64_t> left;  // LimitUpstream: bytes it may still carry
  };

  bool OpenPipe(Direction& direction);
  void Pump(Direction& direction);
  void PumpFiltered(Direction& direction);
  void Discard(Direction& direction);
  bool Count(Direction& direction, size_t size);
  // What the run may still send upstream (egress_bytes_max minus what every connection sent).
  uint64_t EgressLeft() const;
  // With the budget spent and the pipe empty: the connection ends if the sandbox has more.
  void CheckEgressOverrun(Direction& direction);
  void CutAtEgressLimit();
  void Await(Direction& direction, boost::asio::socket_base::wait_type what);
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
  bool egress_spent_ = false;  // the filtered direction sends its last bytes, then is cut
  bool finished_ = false;
  UpstreamFilter filter_;
  bool refused_ = false;
  std::vector<uint8_t> filter_in_;   // one read of the sandbox's bytes
  std::vector<uint8_t> filter_out_;  // what the filter let through, not yet sent
  size_t filter_sent_ = 0;
};

// Closes `socket` so the peer sees a reset (SO_LINGER 0), not an orderly end of stream.
void ResetAndClose(boost::asio::ip::tcp::socket& socket);

}  // namespace sbx::netd
