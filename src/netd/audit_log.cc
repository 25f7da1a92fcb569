// Formats audit records as ASCII JSON lines and writes each with one write(2).
#include "src/netd/audit_log.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <ctime>

namespace sbx::netd {

bool IsDenyReason(const std::string& reason) {
  for (const char* known : kDenyReasons) {
    if (reason == known) return true;
  }
  return false;
}

std::string UtcTimestampMs() {
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  tm utc{};
  gmtime_r(&now.tv_sec, &utc);
  char text[96];
  std::snprintf(text, sizeof(text), "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", utc.tm_year + 1900,
                utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec,
                now.tv_nsec / 1000000);
  return text;
}

std::string AuditLog::FormatLine(const nlohmann::ordered_json& fields) {
  nlohmann::ordered_json line;
  line["v"] = 1;
  line["run"] = run_id_;
  line["seq"] = ++seq_;
  line["ts"] = UtcTimestampMs();
  for (const auto& [key, value] : fields.items()) line[key] = value;
  // ensure_ascii: control bytes, quotes and non-ASCII come out as escapes; replace: invalid
  // UTF-8 (a hostile name) becomes U+FFFD instead of an exception.
  return line.dump(-1, ' ', true, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

void AuditLog::Write(const nlohmann::ordered_json& fields) {
  if (fd_ < 0) return;
  const std::string line = FormatLine(fields);
  ssize_t written;
  do {
    written = ::write(fd_, line.data(), line.size());
  } while (written < 0 && errno == EINTR);
  // A failed or short write (disk full) loses this line or its end; the run's summary still
  // counts it. The digest takes what the file took, so it stays the file's.
  if (written > 0) digest_.Update(line.data(), static_cast<size_t>(written));
}

std::string AuditLog::Sha256Hex() const {
  if (fd_ < 0) return "";
  struct stat info {};
  if (::fstat(fd_, &info) != 0 || static_cast<uint64_t>(info.st_size) != digest_.size()) return "";
  return digest_.HexDigest();
}

void AuditLog::LogDns(const DnsAuditRecord& record) {
  nlohmann::ordered_json fields;
  fields["ev"] = "dns";
  fields["qname"] = record.qname;
  fields["qtype"] = record.qtype;
  fields["decision"] = record.allowed ? "allow" : "deny";
  if (record.allowed) {
    fields["rule"] = record.rule;
  } else {
    fields["reason"] = record.reason;
  }
  fields["answer"] = record.answer;
  Write(fields);
}

void AuditLog::LogConn(const ConnAuditRecord& record) {
  nlohmann::ordered_json fields;
  fields["ev"] = "conn";
  fields["proto"] = record.proto;
  fields["dst"] = record.dst;
  if (record.via_proxy) fields["via"] = "proxy";
  fields["name"] = record.name ? nlohmann::ordered_json(*record.name) : nullptr;
  if (record.name) fields["name_src"] = record.name_src;
  if (record.sni) fields["sni"] = *record.sni;
  if (record.host) fields["host"] = *record.host;
  fields["decision"] = record.allowed ? "allow" : "deny";
  if (!record.rule.empty()) fields["rule"] = record.rule;
  if (!record.reason.empty()) fields["reason"] = record.reason;
  if (!record.allowed && record.mitm) fields["mitm"] = true;
  if (record.allowed) {
    if (record.upstream) fields["upstream"] = *record.upstream;
    fields["mitm"] = record.mitm;
    fields["bytes_up"] = record.bytes_up;
    fields["bytes_down"] = record.bytes_down;
    fields["ms"] = record.ms;
    fields["end"] = record.end;
  }
  Write(fields);
}

void AuditLog::LogHttp(const HttpAuditRecord& record) {
  nlohmann::ordered_json fields;
  fields["ev"] = "http";
  fields["name"] = record.name;
  fields["method"] = record.method;
  fields["path"] = record.path;
  fields["status"] = record.status;
  fields["inject"] = record.inject;
  // Every record says how it was decided, as dns and conn records do.
  fields["decision"] = record.reason.empty() ? "allow" : "deny";
  if (!record.reason.empty()) {
    fields["reason"] = record.reason;
    if (!record.rule.empty()) fields["rule"] = record.rule;
  }
  fields["ms"] = record.ms;
  Write(fields);
}

}  // namespace sbx::netd
