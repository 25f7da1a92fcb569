// Reading and logging the UDP audit taps; see udp_tap.h.
#include "src/netd/udp_tap.h"

#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

namespace sbx::netd {
namespace {

constexpr uint16_t kDnsPortNumber = 53;
// Datagrams read per wake-up before the other work of the loop gets its turn.
constexpr int kReadsPerTurn = 64;

uint16_t Read16(std::span<const uint8_t> bytes, size_t at) {
  return static_cast<uint16_t>((bytes[at] << 8) | bytes[at + 1]);
}

IpAddress AddressFrom(const uint8_t* bytes, bool v6) {
  IpAddress address;
  address.v6 = v6;
  std::memcpy(address.bytes.data(), bytes, v6 ? 16 : 4);
  return address;
}

bool IsLoopback(const IpAddress& address) {
  if (!address.v6) return address.bytes[0] == 127;
  static const std::array<uint8_t, 16> kLoopback6 = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  return address.bytes == kLoopback6;
}

// The filter already drops these; checked again so the log never depends on it alone.
std::optional<TappedDatagram> Kept(const TappedDatagram& datagram) {
  if (IsLoopback(datagram.destination.address) || datagram.source.port == kDnsPortNumber ||
      datagram.destination.port == kDnsPortNumber) {
    return std::nullopt;
  }
  return datagram;
}

}  // namespace

std::optional<TappedDatagram> ParseTappedIpv4(std::span<const uint8_t> packet) {
  if (packet.size() < 20 || (packet[0] >> 4) != 4) return std::nullopt;
  const size_t header = static_cast<size_t>(packet[0] & 0x0f) * 4;
  if (header < 20 || packet.size() < header + 8 || packet[9] != IPPROTO_UDP) return std::nullopt;
  if ((Read16(packet, 6) & 0x1fff) != 0) return std::nullopt;  // a later fragment: no ports
  TappedDatagram datagram;
  datagram.source = {AddressFrom(packet.data() + 12, false), Read16(packet, header)};
  datagram.destination = {AddressFrom(packet.data() + 16, false), Read16(packet, header + 2)};
  return Kept(datagram);
}

std::optional<TappedDatagram> ParseTappedIpv6(std::span<const uint8_t> udp, const IpAddress& source,
                                              const IpAddress& destination) {
  if (udp.size() < 8) return std::nullopt;
  TappedDatagram datagram;
  datagram.source = {source, Read16(udp, 0)};
  datagram.destination = {destination, Read16(udp, 2)};
  return Kept(datagram);
}

Result<void> UdpTap::Start(UniqueFd fd, int family) {
  v6_ = family == AF_INET6;
  boost::system::error_code ec;
  descriptor_.assign(fd.get(), ec);
  if (ec) return MakeError(ErrorCode::kSetupFailed, "udp_tap: " + ec.message());
  fd.release();
  Wait();
  return Ok{};
}

void UdpTap::Stop() {
  if (stopped_ || !descriptor_.is_open()) return;
  stopped_ = true;
  // What the program sent just before it ended may still be queued: log it before the summary.
  for (size_t i = 0; i < kMaxUdpFlowsLogged; ++i) {
    bool again = false;
    auto datagram = ReadOne(&again);
    if (again) break;
    if (datagram) Record(*datagram);
  }
  boost::system::error_code ec;
  descriptor_.close(ec);
}

void UdpTap::Wait() {
  descriptor_.async_wait(boost::asio::posix::descriptor_base::wait_read,
                         [this](boost::system::error_code ec) {
                           if (ec || stopped_) return;
                           ReadAvailable();
                         });
}

void UdpTap::ReadAvailable() {
  for (int i = 0; i < kReadsPerTurn; ++i) {
    bool again = false;
    auto datagram = ReadOne(&again);
    if (again) break;
    if (datagram) Record(*datagram);
  }
  Wait();
}

std::optional<TappedDatagram> UdpTap::ReadOne(bool* again) {
  uint8_t bytes[128];  // the filters keep at most an IPv4 header and a UDP header
  sockaddr_in6 from{};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(in6_pktinfo))];
  iovec iov{bytes, sizeof(bytes)};
  msghdr message{};
  message.msg_name = &from;
  message.msg_namelen = sizeof(from);
  message.msg_iov = &iov;
  message.msg_iovlen = 1;
  message.msg_control = control;
  message.msg_controllen = sizeof(control);
  const ssize_t got = ::recvmsg(descriptor_.native_handle(), &message, 0);
  // EAGAIN: all read (anything else: the next wake-up says again).
  if (got < 0) {
    *again = errno != EINTR;
    return std::nullopt;
  }
  const std::span<const uint8_t> data(bytes, std::min(static_cast<size_t>(got), sizeof(bytes)));
  if (!v6_) return ParseTappedIpv4(data);
  for (cmsghdr* header = CMSG_FIRSTHDR(&message); header != nullptr;
       header = CMSG_NXTHDR(&message, header)) {
    if (header->cmsg_level != IPPROTO_IPV6 || header->cmsg_type != IPV6_PKTINFO) continue;
    in6_pktinfo info;
    std::memcpy(&info, CMSG_DATA(header), sizeof(info));
    return ParseTappedIpv6(data, AddressFrom(from.sin6_addr.s6_addr, true),
                           AddressFrom(info.ipi6_addr.s6_addr, true));
  }
  return std::nullopt;
}

void UdpTap::Record(const TappedDatagram& datagram) {
  std::set<std::string>& flows = context_.udp_flows;
  if (flows.size() >= kMaxUdpFlowsLogged) return;
  const std::string destination = EndpointToString(datagram.destination);
  if (!flows.insert(std::to_string(datagram.source.port) + " " + destination).second) return;
  ConnAuditRecord record;
  record.proto = "udp";
  record.dst = destination;
  if (auto v4 = V4Of(datagram.destination.address)) {
    if (const std::string* name = context_.pool.NameOf(*v4)) {
      record.name = *name;
      record.name_src = "fakeip";
    }
  }
  record.reason = "udp";
  context_.log.LogConn(record);
  context_.counters.CountDenied(record.name ? *record.name : datagram.destination.address.ToString());
}

}  // namespace sbx::netd
