// Reading a run's network audit log (JSON lines written by sbx-netd) back, incrementally:
// a session reads what its last execution added, so a tool result can tell the model that a
// request was blocked by policy rather than failing on its own.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sbx {

struct NetworkLogDigest {
  uint64_t allowed = 0;
  uint64_t denied = 0;  // every "deny" record, failures included
  // "name-or-destination (reason)" for each distinct denial, in log order, at most kMaxDenials:
  // `denials` those the policy decided, `failures` those it allowed but that failed.
  std::vector<std::string> denials;
  std::vector<std::string> failures;
  static constexpr size_t kMaxDenials = 20;
};

// A deny reason that is not the policy's decision: the policy allowed the request, and the
// name did not resolve, or the upstream could not be reached (a connect timeout included) or
// its certificate verified. A model told "blocked by policy" stops retrying; these may be
// outages. (`timeout` is not one: the client sent no name in time, so nothing was decided.)
bool IsNetworkFailureReason(const std::string& reason);

// Reads complete lines from byte *offset on and advances *offset past them (a line still
// being written stays for the next call). Counts the records with a "decision"; lines that
// are not JSON objects are skipped. A missing file reads as empty.
NetworkLogDigest ReadNetworkLogSince(const std::string& path, uint64_t* offset);

}  // namespace sbx
