// Relays bytes both ways through splice(2) pipes, with half-close, idle, egress-limit and stop
// handling.
#include "src/netd/relay.h"

#include <fcntl.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>

#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>

namespace sbx::netd {
namespace {

constexpr unsigned kSpliceFlags = SPLICE_F_NONBLOCK | SPLICE_F_MOVE;
// Rounds (a splice out, then one in) a direction makes before it lets the other connections,
// the other direction and the timers run (netd has one thread).
constexpr int kSplicesPerTurn = 16;
// A direction that has carried this much is a bulk transfer: its pipe grows.
constexpr uint64_t kGrowPipeAfterBytes = 256 * 1024;

}  // namespace

const char* RelayEndName(RelayEnd end) {
  switch (end) {
    case RelayEnd::kFin:
      return "fin";
    case RelayEnd::kReset:
      return "reset";
    case RelayEnd::kIdle:
      return "idle";
    case RelayEnd::kLimitBytes:
      return "limit_bytes";
    case RelayEnd::kStop:
      return "stop";
  }
  return "reset";
}

void ResetAndClose(boost::asio::ip::tcp::socket& socket) {
  if (!socket.is_open()) return;
  const linger reset{1, 0};
  setsockopt(socket.native_handle(), SOL_SOCKET, SO_LINGER, &reset, sizeof(reset));
  boost::system::error_code ec;
  socket.close(ec);
}

Relay::Relay(boost::asio::ip::tcp::socket& client, boost::asio::ip::tcp::socket& upstream,
             NetdContext& context)
    : up_{client, upstream, true},
      down_{upstream, client, false},
      context_(context),
      idle_timer_(client.get_executor()),
      idle_timeout_(SteadySeconds(context.policy.limits.idle_timeout_seconds)) {}

void Relay::Start(std::vector<uint8_t> first_bytes, std::shared_ptr<void> owner,
                  std::function<void(RelayEnd)> done) {
  owner_ = std::move(owner);
  done_ = std::move(done);
  last_activity_ = std::chrono::steady_clock::now();
  boost::system::error_code client_ec, upstream_ec;
  up_.from.native_non_blocking(true, client_ec);
  up_.to.native_non_blocking(true, upstream_ec);
  // EMFILE here (4 more fds per connection) ends this connection only.
  if (client_ec || upstream_ec || !OpenPipe(up_) || !OpenPipe(down_)) {
    return Finish(RelayEnd::kReset, true);
  }
  WatchIdle();
  Pump(down_);
  if (finished_) return;
  if (first_bytes.empty()) return Pump(up_);
  // The first bytes were read before the decision; they go out before anything spliced, as
  // far as the run's egress budget reaches.
  const bool over_budget = first_bytes.size() > EgressLeft();
  if (over_budget) first_bytes.resize(static_cast<size_t>(EgressLeft()));
  if (!Count(up_, first_bytes.size())) return;
  auto bytes = std::make_shared<std::vector<uint8_t>>(std::move(first_bytes));
  boost::asio::async_write(
      up_.to, boost::asio::buffer(*bytes),
      [this, bytes, over_budget, owner = owner_](boost::system::error_code ec, size_t) {
        if (finished_) return;
        if (ec) return Finish(RelayEnd::kReset, true);
        if (over_budget) return CutAtEgressLimit();
        Pump(up_);
      });
}

bool Relay::OpenPipe(Direction& direction) {
  int ends[2];
  if (pipe2(ends, O_NONBLOCK | O_CLOEXEC) != 0) return false;
  direction.pipe_out.reset(ends[0]);
  direction.pipe_in.reset(ends[1]);
  return true;
}

void Relay::Pump(Direction& direction) {
  if (filter_ && direction.upstream_bound) return PumpFiltered(direction);
  for (int turns = 0; turns < kSplicesPerTurn; ++turns) {
    bool moved = false;
    if (direction.in_pipe > 0) {
      const ssize_t out = splice(direction.pipe_out.get(), nullptr, direction.to.native_handle(),
                                 nullptr, direction.in_pipe, kSpliceFlags);
      if (out == 0 || (out < 0 && errno != EINTR && errno != EAGAIN)) {
        return Finish(RelayEnd::kReset, true);
      }
      if (out < 0 && errno == EINTR) moved = true;
      if (out > 0) {
        direction.in_pipe -= static_cast<size_t>(out);
        last_activity_ = std::chrono::steady_clock::now();
        moved = true;
      }
    }
    if (direction.in_pipe == 0 && direction.end_of_stream) return OnEndOfStream(direction);
    // Read whenever the pipe may have room, not only once it is empty: while the receiver is
    // slow, the pipe takes what the sender has sent, so its window stays open.
    size_t want = direction.end_of_stream ? 0 : kRelayPipeBytes;
    if (direction.left) {
      if (*direction.left == 0 && direction.in_pipe == 0) return Discard(direction);
      want = static_cast<size_t>(std::min<uint64_t>(want, *direction.left));
    }
    if (direction.upstream_bound && want > 0) {
      // Never more than the run's egress budget: what fits goes out, and the connection ends
      // only once the sandbox has more to send (the pipe drained first).
      const uint64_t budget = EgressLeft();
      if (budget == 0 && direction.in_pipe == 0) return CheckEgressOverrun(direction);
      want = static_cast<size_t>(std::min<uint64_t>(want, budget));
    }
    if (want > 0) {
      const ssize_t in = splice(direction.from.native_handle(), nullptr, direction.pipe_in.get(),
                                nullptr, want, kSpliceFlags);
      if (in == 0) {
        direction.end_of_stream = true;
        if (direction.in_pipe == 0) return OnEndOfStream(direction);
        continue;
      }
      // EAGAIN: nothing to read, or the pipe is full (the kernel counts slots, not bytes).
      if (in < 0 && errno != EINTR && errno != EAGAIN) return Finish(RelayEnd::kReset, true);
      if (in < 0 && errno == EINTR) moved = true;
      if (in > 0) {
        if (!Count(direction, static_cast<size_t>(in))) return;
        direction.in_pipe += static_cast<size_t>(in);
        if (direction.left) *direction.left -= static_cast<uint64_t>(in);
        moved = true;
      }
    }
    if (!moved) {
      // Bytes waiting: the receiver's room is what moves this direction on (the pipe may be
      // full). An empty pipe waits for the sender.
      return Await(direction, direction.in_pipe > 0 ? boost::asio::socket_base::wait_write
                                                    : boost::asio::socket_base::wait_read);
    }
  }
  boost::asio::post(direction.from.get_executor(), [this, &direction, owner = owner_] {
    if (!finished_) Pump(direction);
  });
}

void Relay::Discard(Direction& direction) {
  // The other side may still be answering; its end ends the relay (OnEndOfStream).
  if (down_.finished) return Finish(RelayEnd::kFin, false);
  char scratch[16 * 1024];
  for (int reads = 0; reads < kSplicesPerTurn; ++reads) {
    const ssize_t in = ::recv(direction.from.native_handle(), scratch, sizeof(scratch), 0);
    if (in == 0) return OnEndOfStream(direction);
    if (in < 0 && errno == EINTR) continue;
    if (in < 0 && errno == EAGAIN) return Await(direction, boost::asio::socket_base::wait_read);
    if (in < 0) return Finish(RelayEnd::kReset, true);
  }
  boost::asio::post(direction.from.get_executor(), [this, &direction, owner = owner_] {
    if (!finished_) Pump(direction);
  });
}

uint64_t Relay::EgressLeft() const {
  const uint64_t sent = context_.counters.summary().bytes_up;
  const uint64_t limit = context_.policy.limits.egress_bytes_max;
  return sent >= limit ? 0 : limit - sent;
}

void Relay::CheckEgressOverrun(Direction& direction) {
  char byte;
  const ssize_t peeked =
      ::recv(direction.from.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  if (peeked > 0) return CutAtEgressLimit();
  if (peeked == 0) {
    direction.end_of_stream = true;
    return OnEndOfStream(direction);
  }
  if (errno == EAGAIN || errno == EINTR) {
    return Await(direction, boost::asio::socket_base::wait_read);
  }
  Finish(RelayEnd::kReset, true);
}

void Relay::CutAtEgressLimit() {
  // What fit in the budget has been written to the upstream socket: it gets those bytes and an
  // end of stream (a close with nothing unread sends the FIN after them; a reset would drop
  // what the kernel still holds). The sandbox's side is reset: its send was cut.
  boost::system::error_code ec;
  up_.to.shutdown(boost::asio::socket_base::shutdown_send, ec);
  // Unread bytes from the upstream (an early answer) would turn the close into a reset that
  // drops what is still queued: read and drop what has arrived (bounded) first.
  char scratch[16 * 1024];
  for (int reads = 0; reads < kSplicesPerTurn; ++reads) {
    const ssize_t in = ::recv(up_.to.native_handle(), scratch, sizeof(scratch), MSG_DONTWAIT);
    if (in <= 0 && errno != EINTR) break;
  }
  up_.to.close(ec);
  Finish(RelayEnd::kLimitBytes, true);
}

bool Relay::Count(Direction& direction, size_t size) {
  last_activity_ = std::chrono::steady_clock::now();
  if (direction.upstream_bound) {
    const RunSummary& totals = context_.counters.summary();
    if (totals.bytes_up + size > context_.policy.limits.egress_bytes_max) {
      Finish(RelayEnd::kLimitBytes, true);
      return false;
    }
    context_.counters.AddBytesUp(size);
  } else {
    context_.counters.AddBytesDown(size);
  }
  const bool was_small = direction.bytes < kGrowPipeAfterBytes;
  direction.bytes += size;
  if (was_small && direction.bytes >= kGrowPipeAfterBytes) {
    // Best effort: over the uid's pipe quota (fs.pipe-user-pages-soft) this fails with EPERM
    // and the pipe keeps its size.
    (void)fcntl(direction.pipe_in.get(), F_SETPIPE_SZ, kRelayPipeBytes);
  }
  return true;
}

void Relay::Await(Direction& direction, boost::asio::socket_base::wait_type what) {
  auto& socket = what == boost::asio::socket_base::wait_read ? direction.from : direction.to;
  socket.async_wait(what, [this, &direction, owner = owner_](boost::system::error_code ec) {
    if (finished_) return;
    if (ec) return Finish(RelayEnd::kReset, true);
    Pump(direction);
  });
}

void Relay::OnEndOfStream(Direction& direction) {
  direction.finished = true;
  boost::system::error_code ec;
  // A refused request's page still has to reach the sandbox (refused()).
  if (!refused_ || direction.upstream_bound) {
    direction.to.shutdown(boost::asio::socket_base::shutdown_send, ec);
  }
  const bool up_done = up_.finished || (up_.left == 0u && up_.in_pipe == 0);
  if (up_done && down_.finished) Finish(RelayEnd::kFin, false);
}

void Relay::WatchIdle() {
  idle_timer_.expires_at(last_activity_ + idle_timeout_);
  idle_timer_.async_wait([this, owner = owner_](boost::system::error_code ec) {
    if (finished_ || ec) return;
    if (std::chrono::steady_clock::now() - last_activity_ >= idle_timeout_) {
      return Finish(RelayEnd::kIdle, true);
    }
    WatchIdle();
  });
}

void Relay::Cut(RelayEnd end) {
  if (!finished_) Finish(end, true);
}

void Relay::Finish(RelayEnd end, bool reset) {
  finished_ = true;
  idle_timer_.cancel();
  if (reset) {
    ResetAndClose(up_.from);
    ResetAndClose(up_.to);
  } else {
    boost::system::error_code ec;
    if (!refused_) up_.from.close(ec);
    up_.to.close(ec);
  }
  // Bytes still in a pipe are dropped with it; its pages go back to the uid's quota now.
  for (Direction* direction : {&up_, &down_}) {
    direction->pipe_out.reset();
    direction->pipe_in.reset();
  }
  auto done = std::move(done_);
  owner_.reset();
  if (done) done(end);
}

}  // namespace sbx::netd
