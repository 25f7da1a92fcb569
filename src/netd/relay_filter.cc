// The filtered upstream direction of a relay: the sandbox's bytes read into netd, passed
// through the filter, and what it lets through sent upstream (relay.h, FilterUpstream).
#include "src/netd/relay.h"

#include <sys/socket.h>

#include <cerrno>

#include <boost/asio/post.hpp>

namespace sbx::netd {
namespace {

constexpr size_t kFilterReadBytes = 64 * 1024;
// Reads a direction makes before it lets the rest of netd run (netd has one thread).
constexpr int kReadsPerTurn = 16;

}  // namespace

void Relay::PumpFiltered(Direction& direction) {
  for (int turns = 0; turns < kReadsPerTurn; ++turns) {
    while (filter_sent_ < filter_out_.size()) {
      const ssize_t out = ::send(direction.to.native_handle(), filter_out_.data() + filter_sent_,
                                 filter_out_.size() - filter_sent_, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (out < 0 && errno == EINTR) continue;
      if (out < 0 && errno == EAGAIN) {
        return Await(direction, boost::asio::socket_base::wait_write);
      }
      if (out <= 0) return Finish(RelayEnd::kReset, true);
      filter_sent_ += static_cast<size_t>(out);
      last_activity_ = std::chrono::steady_clock::now();
    }
    filter_out_.clear();
    filter_sent_ = 0;
    if (egress_spent_) return CutAtEgressLimit();
    // Refused: what came before the refused request has gone; the upstream gets its end of
    // stream and finishes its answers.
    if (refused_ || direction.end_of_stream) return OnEndOfStream(direction);
    filter_in_.resize(kFilterReadBytes);
    const ssize_t in =
        ::recv(direction.from.native_handle(), filter_in_.data(), filter_in_.size(), MSG_DONTWAIT);
    if (in == 0) {
      direction.end_of_stream = true;
      continue;
    }
    if (in < 0 && errno == EINTR) continue;
    if (in < 0 && errno == EAGAIN) return Await(direction, boost::asio::socket_base::wait_read);
    if (in < 0) return Finish(RelayEnd::kReset, true);
    if (!filter_({filter_in_.data(), static_cast<size_t>(in)}, filter_out_)) refused_ = true;
    if (filter_out_.size() > EgressLeft()) {  // what fits goes out, then the cut
      filter_out_.resize(static_cast<size_t>(EgressLeft()));
      egress_spent_ = true;
    }
    if (!filter_out_.empty() && !Count(direction, filter_out_.size())) return;
  }
  boost::asio::post(direction.from.get_executor(), [this, &direction, owner = owner_] {
    if (!finished_) Pump(direction);
  });
}

}  // namespace sbx::netd
