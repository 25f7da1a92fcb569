// Address helpers the network-rule files share (parser, matcher, classifier); not a public API.
#pragma once

#include "netpolicy/network_rules.h"

namespace sbx::network_internal {

// ::ffff:a.b.c.d as the IPv4 address a.b.c.d; any other address unchanged.
IpAddress UnwrapV4Mapped(const IpAddress& address);

// True when `address` is in network/prefix_length; false across families.
bool InPrefix(const IpAddress& address, const IpAddress& network, int prefix_length);

// The address with every bit after the first prefix_length cleared.
IpAddress Masked(const IpAddress& address, int prefix_length);

}  // namespace sbx::network_internal
