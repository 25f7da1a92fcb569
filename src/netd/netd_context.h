// What every part of a serving sbx-netd shares: the run's policy, the fake-address pool, the
// audit log and the counters. One per process, owned by main; single-threaded like the
// io_context that uses it.
#pragma once

#include <chrono>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "netpolicy/network_rules.h"
#include "src/netd/audit_log.h"
#include "src/netd/fake_ip_pool.h"
#include "src/netd/run_counters.h"

namespace sbx::netd {

class MitmContext;

// How long the first bytes of a connection on a peeked port (80, 443) may take, and the request
// head on the proxy_env listener.
inline constexpr double kPeekTimeoutSeconds = 5.0;

// A policy's seconds (a double) as a timer's duration.
inline std::chrono::steady_clock::duration SteadySeconds(double seconds) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(seconds));
}

struct NetdContext {
  NetdContext(NetworkAllowlist allowlist, int audit_fd, std::string run_id)
      : policy(std::move(allowlist)), log(audit_fd, std::move(run_id)) {}

  const NetworkAllowlist policy;
  // Every address of the host's interfaces when netd started (host_addresses.h): refused like
  // internal addresses, since the host's own services listen on them.
  std::vector<IpAddress> host_addresses;
  FakeIpPool pool;
  AuditLog log;
  RunCounters counters;
  // The UDP flows logged so far ("<source port> <destination>"), for every tap (udp_tap.h).
  std::set<std::string> udp_flows;
  // Set when the policy has inject rules (the MITM path); shared_ptr so this header needs no
  // TLS headers.
  std::shared_ptr<MitmContext> mitm;
};

}  // namespace sbx::netd
