// What the network tests assume about the audit log and the `network` object of
// `sbx run --json`, kept in this one place so that a change of that contract is one edit.
//
// Assumed (policies/SCHEMA.md, audit reasons; docs/network.md, the audit log):
// - result.network = {mode, dns_queries, allowed, denied, denied_names, log_path, log_sha256};
//   log_path names a JSON-lines file still present after the run; log_sha256 is its sha256.
// - Each line: v, run (the result's run_id), seq, ts, ev ("dns" | "conn"), decision ("allow" | "deny"), rule
//   ("allow[0]"), reason (when denied); dns: qname, qtype ("A", "AAAA", "TXT", ...);
//   conn: name, name_src ("fakeip" | "sni" | "host" | "proxy"), dst and upstream as "ip:port"
//   ("[v6]:port"), bytes_up, bytes_down; through the proxy_env proxy also "via": "proxy", and
//   dst is the target as "name:port" or "ip:port".
// - A connection may have more than one record (at decision time and at close), so counts of
//   log records are lower bounds; exact counts come from the servers (SmallInternet events).
// And about how the workload sees a denial (ExpectBlockedByPolicy, ExpectReset):
// - a plain-HTTP request denied after its head was read (no_rule, host_mismatch,
//   internal_address) gets a 403 whose body says "policy"; any other denied TCP connection is
//   reset (ECONNRESET), including limit_connections and every denial on 443;
// - the audit-only listeners of the per-port capture (22, 853, 8443 among them) accept and then
//   reset, so a wrong port on an allowed name logs reason "port" instead of failing with
//   ECONNREFUSED;
// - max_connections counts the connections of the run (open or not); the probe holds all open.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace sbx::testing {

struct AuditLog {
  std::string path;
  std::vector<nlohmann::json> records;
};

// Reads the log named by result.network.log_path and checks the object around it (mode,
// log_sha256, counters present). Adds a test failure and returns no records when it cannot.
AuditLog ReadAuditLog(const nlohmann::json& run_result);
// Reads the JSON-lines log at `path` (an `sbx agent` session's, say), checking each record's
// common fields. Adds a test failure and returns no records when it cannot.
AuditLog ReadAuditLogFile(const std::string& path);

// coreutils' sha256sum of the file (lowercase hex), to check netd's digest against; "" when
// it cannot be computed.
std::string Sha256Of(const std::string& path);

// Matches records on every non-empty field; `dst` and `upstream` compare whole strings.
struct AuditMatch {
  std::string ev{};
  std::string decision{};
  std::string reason{};
  std::string qname{};
  std::string qtype{};
  std::string name{};
  std::string name_src{};
  std::string dst{};
  int dst_port = 0;  // dst ends with ":<port>" (for fake IPs, which tests cannot predict)
  std::string upstream{};
  std::string rule{};
};
std::vector<nlohmann::json> Matching(const AuditLog& log, const AuditMatch& match);

// At least one record matches (the failure message lists the log).
void ExpectRecord(const AuditLog& log, const AuditMatch& match);
// No record matches.
void ExpectNoRecord(const AuditLog& log, const AuditMatch& match);

// The one kind of record each case looks for.
AuditMatch DnsDenied(const std::string& qname, const std::string& reason = "no_rule");
AuditMatch DnsAllowed(const std::string& qname, const std::string& rule);
AuditMatch ConnDenied(const std::string& reason, const std::string& dst = "");
AuditMatch ConnAllowed(const std::string& name, const std::string& name_src,
                       const std::string& upstream);

// "ip:port", with brackets for IPv6: how dst and upstream spell an endpoint.
std::string Endpoint(const std::string& address, int port);

// result.network counters: at least these many, and `denied_name` among denied_names.
void ExpectNetworkSummary(const nlohmann::json& run_result, size_t min_allowed, size_t min_denied,
                          const std::string& denied_name = "");

// How a denied plain-HTTP request is answered, and how a denied TCP connection ends.
void ExpectBlockedByPolicy(const nlohmann::json& probe);  // 403, body says "policy"
void ExpectReset(const nlohmann::json& probe);            // ECONNRESET

}  // namespace sbx::testing
