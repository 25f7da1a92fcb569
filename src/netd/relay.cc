// Relays bytes both ways with half-close, idle, egress-limit and stop handling.
#include "src/netd/relay.h"

#include <sys/socket.h>

#include <boost/asio/write.hpp>

namespace sbx::netd {

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
    : up_{client, upstream, true, {}},
      down_{upstream, client, false, {}},
      context_(context),
      idle_timer_(client.get_executor()),
      idle_timeout_(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
          std::chrono::duration<double>(context.policy.limits.idle_timeout_seconds))) {}

void Relay::Start(std::vector<uint8_t> first_bytes, std::shared_ptr<void> owner,
                  std::function<void(RelayEnd)> done) {
  owner_ = std::move(owner);
  done_ = std::move(done);
  last_activity_ = std::chrono::steady_clock::now();
  up_.buffer.resize(kRelayBufferBytes);
  down_.buffer.resize(kRelayBufferBytes);
  WatchIdle();
  Read(down_);
  if (first_bytes.empty()) {
    Read(up_);
    return;
  }
  // The first bytes were read before the decision; they go out as the first write up.
  const size_t size = first_bytes.size();
  up_.buffer = std::move(first_bytes);
  if (up_.buffer.size() < kRelayBufferBytes) up_.buffer.resize(kRelayBufferBytes);
  Write(up_, size);
}

void Relay::Read(Direction& direction) {
  direction.from.async_read_some(
      boost::asio::buffer(direction.buffer.data(), kRelayBufferBytes),
      [this, &direction, owner = owner_](boost::system::error_code ec, size_t size) {
        if (finished_) return;
        if (ec == boost::asio::error::eof) return OnEndOfStream(direction);
        if (ec) return Finish(RelayEnd::kReset, true);
        Write(direction, size);
      });
}

void Relay::Write(Direction& direction, size_t size) {
  last_activity_ = std::chrono::steady_clock::now();
  if (direction.upstream_bound) {
    const RunSummary& totals = context_.counters.summary();
    if (totals.bytes_up + size > context_.policy.limits.egress_bytes_max) {
      return Finish(RelayEnd::kLimitBytes, true);
    }
    context_.counters.AddBytesUp(size);
  } else {
    context_.counters.AddBytesDown(size);
  }
  direction.bytes += size;
  boost::asio::async_write(
      direction.to, boost::asio::buffer(direction.buffer.data(), size),
      [this, &direction, owner = owner_](boost::system::error_code ec, size_t) {
        if (finished_) return;
        if (ec) return Finish(RelayEnd::kReset, true);
        Read(direction);
      });
}

void Relay::OnEndOfStream(Direction& direction) {
  direction.finished = true;
  boost::system::error_code ec;
  direction.to.shutdown(boost::asio::socket_base::shutdown_send, ec);
  if (up_.finished && down_.finished) Finish(RelayEnd::kFin, false);
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
    up_.from.close(ec);
    up_.to.close(ec);
  }
  auto done = std::move(done_);
  owner_.reset();
  if (done) done(end);
}

}  // namespace sbx::netd
