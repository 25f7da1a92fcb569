// IP addresses for the network rules: parsing, printing, prefix tests and the internal set.
#include <arpa/inet.h>

#include <algorithm>

#include "netpolicy/network_rules.h"
#include "netpolicy/network_rules_internal.h"

namespace sbx {
namespace network_internal {

IpAddress UnwrapV4Mapped(const IpAddress& address) {
  static constexpr uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (!address.v6 || !std::equal(kMapped, kMapped + 12, address.bytes.begin())) return address;
  IpAddress v4;
  std::copy_n(address.bytes.begin() + 12, 4, v4.bytes.begin());
  return v4;
}

IpAddress Masked(const IpAddress& address, int prefix_length) {
  IpAddress masked = address;
  for (int i = 0; i < 16; ++i) {
    int keep = std::clamp(prefix_length - i * 8, 0, 8);
    masked.bytes[i] &= static_cast<uint8_t>(0xff00 >> keep);
  }
  return masked;
}

bool InPrefix(const IpAddress& address, const IpAddress& network, int prefix_length) {
  return address.v6 == network.v6 &&
         Masked(address, prefix_length) == Masked(network, prefix_length);
}

}  // namespace network_internal

namespace {

using network_internal::InPrefix;

struct Range {
  const char* network;
  int prefix_length;
};

// The internal set (see IsInternalAddress in the header). 240/4 includes the broadcast address.
constexpr Range kInternalV4[] = {
    {"0.0.0.0", 8},      {"10.0.0.0", 8},    {"100.64.0.0", 10},  {"127.0.0.0", 8},
    {"169.254.0.0", 16}, {"172.16.0.0", 12}, {"192.168.0.0", 16}, {"198.18.0.0", 15},
    {"224.0.0.0", 4},    {"240.0.0.0", 4},
};
constexpr Range kInternalV6[] = {
    {"fc00::", 7}, {"fe80::", 10}, {"fec0::", 10}, {"ff00::", 8}, {"64:ff9b:1::", 48},
};

// IPv6 forms that carry an IPv4 address, and the byte where it starts. `::` and `::1` are in
// ::/96 and unwrap to 0.0.0.0 and 0.0.0.1, both internal (0/8).
struct Embedding {
  const char* network;
  int prefix_length;
  int v4_offset;
};
constexpr Embedding kEmbeddedV4[] = {
    {"::ffff:0:0", 96, 12},
    {"::", 96, 12},
    {"64:ff9b::", 96, 12},
    {"2002::", 16, 2},
};

bool InAny(const IpAddress& address, const Range* begin, const Range* end) {
  return std::any_of(begin, end, [&](const Range& range) {
    return InPrefix(address, *IpAddress::Parse(range.network), range.prefix_length);
  });
}

}  // namespace

std::optional<IpAddress> IpAddress::Parse(std::string_view text) {
  // inet_pton reads a C string: an embedded NUL would end the address early.
  if (text.empty() || text.size() > 45 || text.find('\0') != std::string_view::npos)
    return std::nullopt;
  const std::string copy(text);
  IpAddress address;
  address.v6 = copy.find(':') != std::string::npos;
  if (::inet_pton(address.v6 ? AF_INET6 : AF_INET, copy.c_str(), address.bytes.data()) != 1)
    return std::nullopt;
  return address;
}

std::string IpAddress::ToString() const {
  char text[INET6_ADDRSTRLEN] = {};
  ::inet_ntop(v6 ? AF_INET6 : AF_INET, bytes.data(), text, sizeof(text));
  return text;
}

std::optional<IpAddress> EmbeddedIpv4(const IpAddress& address) {
  if (!address.v6) return std::nullopt;
  for (const Embedding& form : kEmbeddedV4) {
    if (!InPrefix(address, *IpAddress::Parse(form.network), form.prefix_length)) continue;
    IpAddress v4;
    std::copy_n(address.bytes.begin() + form.v4_offset, 4, v4.bytes.begin());
    return v4;
  }
  return std::nullopt;
}

bool IsInternalAddress(const IpAddress& address) {
  if (!address.v6) return InAny(address, std::begin(kInternalV4), std::end(kInternalV4));
  if (InAny(address, std::begin(kInternalV6), std::end(kInternalV6))) return true;
  if (auto v4 = EmbeddedIpv4(address)) return IsInternalAddress(*v4);
  return false;
}

}  // namespace sbx
