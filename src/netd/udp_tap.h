// Logs the UDP datagrams the sandbox sent to the world, read from the raw UDP sockets the
// sandbox child opened (sandbox/net/network_udp_tap.h). Nothing is relayed: the sandbox's kernel
// has already refused each datagram (nobody listens there). One "conn" record per flow (the
// source port and the destination), proto "udp", decision deny, reason "udp", named when the
// destination is a fake address (QUIC to an allowed name, say), and one denial counted. At
// most kMaxUdpFlowsLogged flows per run are logged and counted: the log stays bounded however
// fast the code sends (the kernel refuses the rest all the same).
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>

#include "base/error.h"
#include "base/unique_fd.h"
#include "src/netd/endpoint.h"
#include "src/netd/netd_context.h"

namespace sbx::netd {

inline constexpr size_t kMaxUdpFlowsLogged = 1024;

struct TappedDatagram {
  Endpoint source;
  Endpoint destination;
};

// What an IPv4 tap reads: the IP header, then UDP. nullopt when it is anything else, too
// short, or a datagram the tap should not have kept (loopback, port 53, a later fragment).
std::optional<TappedDatagram> ParseTappedIpv4(std::span<const uint8_t> packet);
// What an IPv6 tap reads: the UDP header, with the addresses from the socket API. nullopt as
// above.
std::optional<TappedDatagram> ParseTappedIpv6(std::span<const uint8_t> udp, const IpAddress& source,
                                              const IpAddress& destination);

class UdpTap {
 public:
  UdpTap(boost::asio::io_context& io, NetdContext& context) : descriptor_(io), context_(context) {}
  // Takes a tap (a non-blocking raw UDP socket of `family`) and starts reading it.
  Result<void> Start(UniqueFd fd, int family);
  // Logs what is still queued, then closes the tap.
  void Stop();
  int family() const { return v6_ ? AF_INET6 : AF_INET; }

 private:
  void Wait();
  void ReadAvailable();
  std::optional<TappedDatagram> ReadOne(bool* again);
  void Record(const TappedDatagram& datagram);

  boost::asio::posix::stream_descriptor descriptor_;
  NetdContext& context_;
  bool v6_ = false;
  bool stopped_ = false;
};

}  // namespace sbx::netd
