// The decision for one accepted TCP connection (docs/network.md, Deciding a connection), as pure
// functions of the policy, the fake-address pool and what the connection showed. sbx-netd's
// connection code only performs the I/O around them.
//
// Order, for a connection whose original destination is `dst`:
//   1. ClassifyDestination: loopback, 0.0.0.0/8, unspecified and multicast destinations are
//      refused outright; an address in 198.18.0.0/15 stands for the name it was handed out for
//      (none: unmapped_fake_ip); any other address is an IP literal.
//   2. On ports 80 and 443 the first bytes are read (first_bytes.h) before deciding.
//   3. DecideConnection: a fake address's name must be the SNI / Host the client sent (case
//      and a trailing dot ignored; a ClientHello without SNI names nothing and is refused as a
//      mismatch); port 0 is refused (DecideName: no service listens there); an IP literal adopts an
//      SNI / Host that an allow rule names (so netd dials that name, never the literal), else
//      it is matched against the address rules. Deny rules win over allow rules.
//   4. DialableAddresses: of the addresses the name resolved to for this connection (or the
//      literal), those neither internal nor the host's own (an address of one of its
//      interfaces: its services listen there), unless allow_private covers them; none left is
//      internal_address.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "netpolicy/network_rules.h"
#include "src/netd/fake_ip_pool.h"
#include "src/netd/first_bytes.h"

namespace sbx::netd {

enum class DestinationKind {
  kRefused,         // loopback, 0/8, ::, multicast: reset at once (reason internal_address)
  kUnmappedFakeIp,  // in 198.18.0.0/15 but never handed out
  kFakeName,        // `name` is the name the address was handed out for
  kLiteral,         // an IP literal the client connected to directly
};

struct Destination {
  DestinationKind kind = DestinationKind::kRefused;
  IpAddress address;  // IPv4-mapped forms already unwrapped
  uint16_t port = 0;
  std::string name;
  // kFakeName: where the name came from, for the audit log: "fakeip", or "proxy" for the
  // target of a CONNECT to the proxy_env listener (decided exactly like a fake address's name).
  std::string name_src = "fakeip";
};

Destination ClassifyDestination(const IpAddress& dst, uint16_t port, const FakeIpPool& pool);

struct ConnectionVerdict {
  bool allowed = false;
  std::string rule;
  std::string reason;               // one of audit_log.h's kDenyReasons when denied
  std::optional<std::string> name;  // the name to resolve and dial; none: dial the literal
  std::string name_src;             // "fakeip", "sni", "host" when name is set
};

ConnectionVerdict DecideConnection(const NetworkAllowlist& policy, const Destination& destination,
                                   const Peek& peek);

std::vector<IpAddress> DialableAddresses(const NetworkAllowlist& policy,
                                         const std::vector<IpAddress>& host_addresses,
                                         const std::vector<IpAddress>& resolved, uint16_t port);

}  // namespace sbx::netd
