// The addresses of the host's own network interfaces, as sbx-netd sees them from the host's
// network namespace.
//
// An allowed name that resolves to one of them (a public or documentation-range address on
// eth0, say) would reach services the host exposes on 0.0.0.0, so netd refuses them like
// internal addresses unless an allow_private rule names them (connection_decision.h).
#pragma once

#include <vector>

#include "base/error.h"
#include "netpolicy/network_rules.h"

namespace sbx::netd {

// Every IPv4 and IPv6 address of every interface, up or down (getifaddrs(3): an rtnetlink
// dump). IPv4-mapped forms never occur; each address appears once.
Result<std::vector<IpAddress>> ReadHostAddresses();

}  // namespace sbx::netd
