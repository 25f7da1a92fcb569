// The stub DNS's answers: what sbx-netd replies to one query packet, from policy alone.
//
// A valid name that some allow rule names on any port (and no deny rule names) gets, for
// A/IN, its fake address from the pool; for AAAA, HTTPS, SVCB, TXT and every other type NODATA
// (NOERROR, no records), so clients fall back to IPv4 and never see an ECH config. Any other
// name gets NXDOMAIN. Nothing is ever forwarded: the host's resolvers never see a query the
// sandbox made up (DNS tunnelling), only names netd dials for allowed connections.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "netpolicy/network_rules.h"
#include "src/netd/audit_log.h"
#include "src/netd/fake_ip_pool.h"

namespace sbx::netd {

struct DnsOutcome {
  std::vector<uint8_t> reply;            // empty: the packet is dropped without an answer
  std::optional<DnsAuditRecord> record;  // what to log and count; none for a dropped packet
};

DnsOutcome AnswerDnsQuery(std::span<const uint8_t> packet, const NetworkAllowlist& policy,
                          FakeIpPool& pool);

}  // namespace sbx::netd
