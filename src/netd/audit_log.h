// sbx-netd's audit log: one JSON object per line for every DNS query and TCP connection it
// decided (the `network.jsonl` of a run; the format is policies/SCHEMA.md's).
//
// Every line starts with {"v":1,"run":<id>,"seq":<1, 2, ...>,"ts":"<UTC, ms>","ev":...}.
// Lines are pure ASCII (non-ASCII escaped, invalid UTF-8 replaced), so no name a client sent can
// break a line or forge another one. Each line is written with a single write(2) to an
// O_APPEND descriptor, so a reader never sees half a line from a live netd. What is never
// written: secrets, placeholders, query strings, bodies; there is no field that could hold one.
// The log's SHA-256 is kept as it is written (Sha256Hex), over exactly the bytes write(2)
// took.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/netd/log_digest.h"

namespace sbx::netd {

// The reasons a query or connection may be denied for (policies/SCHEMA.md's fixed list).
inline constexpr const char* kDenyReasons[] = {
    "no_rule",          "deny_rule",        "port",
    "internal_address", "unmapped_fake_ip", "sni_mismatch",
    "host_mismatch",    "resolve_failed",   "tls_verify_failed",
    "http_rule",        "placeholder_leak", "limit_connections",
    "limit_bytes",      "timeout",          "upstream_error",
    "proxy_request",    "udp"};
bool IsDenyReason(const std::string& reason);

struct DnsAuditRecord {
  std::string qname;  // as asked (lower-cased); raw bytes of an invalid name are escaped
  std::string qtype;  // "A", "AAAA", "HTTPS", "TYPE99", ...
  bool allowed = false;
  std::string rule;    // allowed: "allow[0]"
  std::string reason;  // denied: one of kDenyReasons
  std::string answer;  // "198.18.4.17", "NODATA", "NXDOMAIN", "FORMERR", "NOTIMP", "SERVFAIL"
};

struct ConnAuditRecord {
  std::string proto = "tcp";        // "udp": a datagram the tap saw (udp_tap.h), always denied
  std::string dst;                  // "198.18.4.17:443", "[2001:db8::1]:443"
  std::optional<std::string> name;  // null for an IP literal no SNI/Host named
  std::string name_src;             // "fakeip", "sni", "host"; "" when name is null
  std::optional<std::string> sni;   // what the ClientHello named, if one was read
  std::optional<std::string> host;  // what the HTTP Host named, if one was read
  bool allowed = false;
  std::string rule;
  std::string reason;                   // denied, or why an allowed connection was cut
  std::optional<std::string> upstream;  // the exact address dialled
  uint64_t bytes_up = 0;
  uint64_t bytes_down = 0;
  uint64_t ms = 0;
  std::string end;  // allowed: "fin", "reset", "idle", "limit_bytes", "stop"
  bool mitm = false;  // netd terminated the sandbox's TLS (an inject host)
  bool via_proxy = false;  // came through the proxy_env listener (dst is the CONNECT target)
};

// One HTTP request on a MITM'd connection. The path never has its query string; no header
// value, no body.
struct HttpAuditRecord {
  std::string name;
  std::string method;
  std::string path;
  unsigned status = 0;  // what the sandbox got (netd's own 403/502 included)
  std::vector<std::string> inject;  // the rules whose header was set
  std::string reason;               // netd refused or could not forward it: a kDenyReasons entry
  std::string rule;                 // placeholder_leak: "inject[i]"
  uint64_t ms = 0;
};

// Used from one thread (netd serves on one io_context).
class AuditLog {
 public:
  // fd < 0: nothing is written (the run keeps no log). The fd is borrowed; it must be a new,
  // empty file that nothing else writes to (the runner creates it O_EXCL for netd alone).
  AuditLog(int fd, std::string run_id) : fd_(fd), run_id_(std::move(run_id)) {}

  void LogDns(const DnsAuditRecord& record);
  void LogConn(const ConnAuditRecord& record);
  void LogHttp(const HttpAuditRecord& record);

  // The line for `fields` as it would be written (with v, run, seq, ts first), for tests.
  std::string FormatLine(const nlohmann::ordered_json& fields);

  // Lowercase hex SHA-256 of every byte written so far: the log's content, given an empty
  // file with no other writer. "" without a log, or when the file's size is not the number of
  // bytes written (something else wrote to or truncated it: the digest would not be the
  // file's).
  std::string Sha256Hex() const;

 private:
  void Write(const nlohmann::ordered_json& fields);

  int fd_;
  std::string run_id_;
  uint64_t seq_ = 0;
  LogDigest digest_;
};

// The current UTC time with milliseconds, as "YYYY-MM-DDTHH:MM:SS.mmmZ" (ISO 8601).
std::string UtcTimestampMs();

}  // namespace sbx::netd
