// Socket address conversions for sbx-netd.
#include "src/netd/endpoint.h"

#include <arpa/inet.h>
#include <linux/netfilter_ipv4.h>
#include <linux/netfilter_ipv6/ip6_tables.h>
#include <netinet/in.h>

#include <cstring>

namespace sbx::netd {

IpAddress UnwrapV4Mapped(const IpAddress& address) {
  static constexpr uint8_t kMappedPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (!address.v6 || std::memcmp(address.bytes.data(), kMappedPrefix, 12) != 0) return address;
  IpAddress v4;
  std::memcpy(v4.bytes.data(), address.bytes.data() + 12, 4);
  return v4;
}

IpAddress IpAddressFromV4(uint32_t ipv4) {
  IpAddress address;
  address.bytes[0] = static_cast<uint8_t>(ipv4 >> 24);
  address.bytes[1] = static_cast<uint8_t>(ipv4 >> 16);
  address.bytes[2] = static_cast<uint8_t>(ipv4 >> 8);
  address.bytes[3] = static_cast<uint8_t>(ipv4);
  return address;
}

std::optional<uint32_t> V4Of(const IpAddress& address) {
  if (address.v6) return std::nullopt;
  return uint32_t{address.bytes[0]} << 24 | uint32_t{address.bytes[1]} << 16 |
         uint32_t{address.bytes[2]} << 8 | address.bytes[3];
}

std::optional<Endpoint> EndpointFromSockaddr(const sockaddr* address, socklen_t length) {
  Endpoint endpoint;
  if (address->sa_family == AF_INET && length >= static_cast<socklen_t>(sizeof(sockaddr_in))) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(address);
    std::memcpy(endpoint.address.bytes.data(), &in->sin_addr, 4);
    endpoint.port = ntohs(in->sin_port);
    return endpoint;
  }
  if (address->sa_family == AF_INET6 && length >= static_cast<socklen_t>(sizeof(sockaddr_in6))) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(address);
    endpoint.address.v6 = true;
    std::memcpy(endpoint.address.bytes.data(), &in6->sin6_addr, 16);
    endpoint.address = UnwrapV4Mapped(endpoint.address);
    endpoint.port = ntohs(in6->sin6_port);
    return endpoint;
  }
  return std::nullopt;
}

std::optional<Endpoint> OriginalDestination(int fd, const Endpoint& local) {
  sockaddr_storage original{};
  socklen_t length = local.address.v6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
  const int result = local.address.v6
                         ? getsockopt(fd, SOL_IPV6, IP6T_SO_ORIGINAL_DST, &original, &length)
                         : getsockopt(fd, SOL_IP, SO_ORIGINAL_DST, &original, &length);
  if (result != 0) return std::nullopt;
  return EndpointFromSockaddr(reinterpret_cast<const sockaddr*>(&original), length);
}

std::optional<Endpoint> EndpointFromAsio(const boost::asio::ip::tcp::endpoint& endpoint) {
  return EndpointFromSockaddr(endpoint.data(), static_cast<socklen_t>(endpoint.size()));
}

boost::asio::ip::tcp::endpoint AsioFromEndpoint(const Endpoint& endpoint) {
  if (!endpoint.address.v6) {
    boost::asio::ip::address_v4::bytes_type bytes;
    std::memcpy(bytes.data(), endpoint.address.bytes.data(), 4);
    return {boost::asio::ip::address_v4(bytes), endpoint.port};
  }
  boost::asio::ip::address_v6::bytes_type bytes;
  std::memcpy(bytes.data(), endpoint.address.bytes.data(), 16);
  return {boost::asio::ip::address_v6(bytes), endpoint.port};
}

std::string EndpointToString(const Endpoint& endpoint) {
  const std::string host = endpoint.address.ToString();
  const std::string port = std::to_string(endpoint.port);
  return endpoint.address.v6 ? "[" + host + "]:" + port : host + ":" + port;
}

}  // namespace sbx::netd
