// The running totals of one run that sbx-netd reports in its summary (netd_protocol.h
// step 6) and checks the egress limit against.
//
// allowed and denied count every decision: each DNS query with a usable question and each TCP
// connection. denied_names holds the first kMaxDeniedNames distinct names (or, for IP literals,
// addresses) that were denied, in the order first seen.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace sbx::netd {

inline constexpr size_t kMaxDeniedNames = 10;

struct RunSummary {
  uint64_t dns_queries = 0;
  uint64_t allowed = 0;
  uint64_t denied = 0;
  std::vector<std::string> denied_names;
  uint64_t bytes_up = 0;    // sandbox -> upstream, every connection together
  uint64_t bytes_down = 0;  // upstream -> sandbox
  std::string log_sha256;   // filled at stop (AuditLog::Sha256Hex); "" without an audit log
};

class RunCounters {
 public:
  void CountDnsQuery() { ++summary_.dns_queries; }
  void CountAllowed() { ++summary_.allowed; }
  // `what` is the denied name or address; "" adds nothing to denied_names.
  void CountDenied(const std::string& what);
  void AddBytesUp(uint64_t bytes) { summary_.bytes_up += bytes; }
  void AddBytesDown(uint64_t bytes) { summary_.bytes_down += bytes; }
  const RunSummary& summary() const { return summary_; }

 private:
  RunSummary summary_;
};

}  // namespace sbx::netd
