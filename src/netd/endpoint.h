// Conversions between socket addresses and sbx::IpAddress, and their text in the audit log.
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <optional>
#include <string>

#include <boost/asio/ip/tcp.hpp>

#include "netpolicy/network_rules.h"

namespace sbx::netd {

struct Endpoint {
  IpAddress address;
  uint16_t port = 0;
};

// An AF_INET or AF_INET6 sockaddr; an IPv4-mapped IPv6 address (what a dual-stack listener
// reports for an IPv4 peer) comes back as plain IPv4, so no check sees the v6 form.
std::optional<Endpoint> EndpointFromSockaddr(const sockaddr* address, socklen_t length);
// A connection's destination before the sandbox's NAT redirected it (SO_ORIGINAL_DST, which
// conntrack keeps); nullopt when it was not translated. `local` is the accepted socket's local
// address and gives the family (IPv4, also as v4-mapped on a dual-stack listener, or IPv6).
std::optional<Endpoint> OriginalDestination(int fd, const Endpoint& local);
std::optional<Endpoint> EndpointFromAsio(const boost::asio::ip::tcp::endpoint& endpoint);
boost::asio::ip::tcp::endpoint AsioFromEndpoint(const Endpoint& endpoint);

// ::ffff:a.b.c.d -> a.b.c.d; anything else unchanged.
IpAddress UnwrapV4Mapped(const IpAddress& address);
// A host-byte-order IPv4 address, and back.
IpAddress IpAddressFromV4(uint32_t ipv4);
std::optional<uint32_t> V4Of(const IpAddress& address);

// "198.18.4.17:443", "[2001:db8::1]:443".
std::string EndpointToString(const Endpoint& endpoint);

}  // namespace sbx::netd
