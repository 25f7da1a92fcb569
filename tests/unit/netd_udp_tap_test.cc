// Unit tests for what sbx-netd reads from the UDP audit taps.
#include "src/netd/udp_tap.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace sbx::netd {
namespace {

std::vector<uint8_t> Ipv4Udp(uint8_t ihl_words, uint8_t protocol, uint8_t first_octet = 203,
                             uint16_t destination_port = 443) {
  std::vector<uint8_t> ip(ihl_words * 4u, 0);
  ip[0] = static_cast<uint8_t>(0x40 | ihl_words);
  ip[9] = protocol;
  const uint8_t source[] = {198, 18, 0, 9}, destination[] = {first_octet, 0, 113, 7};
  std::copy(std::begin(source), std::end(source), ip.begin() + 12);
  std::copy(std::begin(destination), std::end(destination), ip.begin() + 16);
  const uint8_t udp[] = {0xc3, 0x50, static_cast<uint8_t>(destination_port >> 8),
                         static_cast<uint8_t>(destination_port), 0, 9, 0, 0};  // from 50000
  ip.insert(ip.end(), std::begin(udp), std::end(udp));
  return ip;
}

TEST(ParseTappedIpv4, ReadsTheAddressesAndPortsAlsoAfterOptions) {
  for (uint8_t ihl : {5, 7}) {
    auto datagram = ParseTappedIpv4(Ipv4Udp(ihl, 17));
    ASSERT_TRUE(datagram) << int(ihl);
    EXPECT_EQ(EndpointToString(datagram->destination), "203.0.113.7:443");
    EXPECT_EQ(EndpointToString(datagram->source), "198.18.0.9:50000");
  }
}

TEST(ParseTappedIpv4, RefusesWhatIsNotAWholeUdpHeaderOrWhatTheTapMustSkip) {
  EXPECT_FALSE(ParseTappedIpv4(Ipv4Udp(5, 6)));               // TCP
  EXPECT_FALSE(ParseTappedIpv4(Ipv4Udp(5, 17, 127)));         // loopback
  EXPECT_FALSE(ParseTappedIpv4(Ipv4Udp(5, 17, 203, 53)));     // DNS: logged by the stub
  auto later_fragment = Ipv4Udp(5, 17);
  later_fragment[7] = 1;
  EXPECT_FALSE(ParseTappedIpv4(later_fragment));
  auto bad_ihl = Ipv4Udp(5, 17);
  bad_ihl[0] = 0x44;  // a 16-byte header cannot be
  EXPECT_FALSE(ParseTappedIpv4(bad_ihl));
  auto short_udp = Ipv4Udp(5, 17);
  short_udp.resize(20 + 7);
  EXPECT_FALSE(ParseTappedIpv4(short_udp));
  auto options_cut = Ipv4Udp(7, 17);
  options_cut.resize(20 + 8);  // the header says 28 bytes: the UDP header is not there
  EXPECT_FALSE(ParseTappedIpv4(options_cut));
  EXPECT_FALSE(ParseTappedIpv4({}));
}

TEST(ParseTappedIpv6, TakesTheAddressesFromTheSocketAndThePortsFromUdp) {
  const IpAddress source = *IpAddress::Parse("2001:db8::1");
  const IpAddress destination = *IpAddress::Parse("2001:db8::7");
  const std::vector<uint8_t> udp = {0x30, 0x39, 0x00, 0x7b, 0, 9, 0, 0};  // 12345 -> 123
  auto datagram = ParseTappedIpv6(udp, source, destination);
  ASSERT_TRUE(datagram);
  EXPECT_EQ(EndpointToString(datagram->destination), "[2001:db8::7]:123");
  EXPECT_EQ(datagram->source.port, 12345);
  EXPECT_FALSE(ParseTappedIpv6(std::vector<uint8_t>(udp.begin(), udp.begin() + 7), source, destination));
  EXPECT_FALSE(ParseTappedIpv6(udp, source, *IpAddress::Parse("::1")));
  const std::vector<uint8_t> dns = {0x30, 0x39, 0x00, 0x35, 0, 9, 0, 0};
  EXPECT_FALSE(ParseTappedIpv6(dns, source, destination));
}

}  // namespace
}  // namespace sbx::netd
