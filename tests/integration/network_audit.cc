// The network tests' assumptions about the audit log and result.network, in one place.
#include "tests/integration/network_audit.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <fstream>

#include "tests/integration/network_fixture.h"
#include "tests/net/process.h"

namespace sbx::testing {
namespace {

std::string Dump(const AuditLog& log) {
  std::string text = log.path + ":\n";
  for (const auto& record : log.records) text += record.dump() + "\n";
  return text;
}

bool FieldIs(const nlohmann::json& record, const char* key, const std::string& want) {
  return want.empty() || Str(record, key) == want;
}

bool PortIs(const nlohmann::json& record, int port) {
  if (port == 0) return true;
  std::string dst = Str(record, "dst"), suffix = ":" + std::to_string(port);
  return dst.size() > suffix.size() &&
         dst.compare(dst.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

std::string Sha256Of(const std::string& path) {
  auto run = nettest::RunBounded({"/usr/bin/sha256sum", path}, 30);
  if (!run || run->exit_code != 0) return "";
  return run->out.substr(0, run->out.find(' '));
}

AuditLog ReadAuditLog(const nlohmann::json& run_result) {
  AuditLog log;
  if (!run_result.is_object() || !run_result.contains("network") ||
      !run_result["network"].is_object()) {
    ADD_FAILURE() << "no `network` object in the result: " << run_result.dump();
    return log;
  }
  const auto& network = run_result["network"];
  EXPECT_EQ(Str(network, "mode"), "allowlist") << network.dump();
  for (const char* counter : {"dns_queries", "allowed", "denied"}) {
    EXPECT_TRUE(network.contains(counter) && network[counter].is_number_unsigned())
        << counter << ": " << network.dump();
  }
  EXPECT_TRUE(network.contains("denied_names") && network["denied_names"].is_array())
      << network.dump();
  if (!network.contains("log_path") || !network["log_path"].is_string()) {
    ADD_FAILURE() << "no network.log_path: " << network.dump();
    return log;
  }
  log = ReadAuditLogFile(network["log_path"].get<std::string>());
  EXPECT_EQ(Str(network, "log_sha256"), Sha256Of(log.path)) << log.path;
  // One run id: the result's is the one every record of its log carries.
  const std::string run_id = Str(run_result, "run_id");
  EXPECT_FALSE(run_id.empty()) << "no run_id in the result: " << run_result.dump();
  for (const auto& record : log.records) EXPECT_EQ(Str(record, "run"), run_id) << record.dump();
  return log;
}

AuditLog ReadAuditLogFile(const std::string& path) {
  AuditLog log;
  log.path = path;
  std::ifstream in(log.path);
  if (!in) {
    ADD_FAILURE() << "the audit log " << log.path << " cannot be read after the run";
    return log;
  }
  std::string line;
  while (std::getline(in, line)) {
    auto record = nlohmann::json::parse(line, nullptr, false);
    EXPECT_TRUE(record.is_object()) << "not a JSON object: " << line;
    if (!record.is_object()) continue;
    EXPECT_EQ(Int(record, "v"), 1) << line;
    for (const char* field : {"run", "seq", "ts", "ev", "decision"}) {
      EXPECT_TRUE(record.contains(field)) << field << " missing: " << line;
    }
    log.records.push_back(std::move(record));
  }
  return log;
}

std::vector<nlohmann::json> Matching(const AuditLog& log, const AuditMatch& match) {
  std::vector<nlohmann::json> found;
  for (const auto& record : log.records) {
    if (FieldIs(record, "ev", match.ev) && FieldIs(record, "decision", match.decision) &&
        FieldIs(record, "reason", match.reason) && FieldIs(record, "qname", match.qname) &&
        FieldIs(record, "qtype", match.qtype) && FieldIs(record, "name", match.name) &&
        FieldIs(record, "name_src", match.name_src) && FieldIs(record, "dst", match.dst) &&
        PortIs(record, match.dst_port) && FieldIs(record, "upstream", match.upstream) &&
        FieldIs(record, "rule", match.rule)) {
      found.push_back(record);
    }
  }
  return found;
}

void ExpectRecord(const AuditLog& log, const AuditMatch& match) {
  EXPECT_FALSE(Matching(log, match).empty())
      << "no record with ev=" << match.ev << " decision=" << match.decision
      << " reason=" << match.reason << " qname=" << match.qname << " name=" << match.name
      << " name_src=" << match.name_src << " dst=" << match.dst << " upstream=" << match.upstream
      << " in " << Dump(log);
}

void ExpectNoRecord(const AuditLog& log, const AuditMatch& match) {
  auto found = Matching(log, match);
  EXPECT_TRUE(found.empty()) << "unexpected: " << (found.empty() ? "" : found[0].dump());
}

AuditMatch DnsDenied(const std::string& qname, const std::string& reason) {
  return {.ev = "dns", .decision = "deny", .reason = reason, .qname = qname};
}

AuditMatch DnsAllowed(const std::string& qname, const std::string& rule) {
  return {.ev = "dns", .decision = "allow", .qname = qname, .qtype = "A", .rule = rule};
}

AuditMatch ConnDenied(const std::string& reason, const std::string& dst) {
  return {.ev = "conn", .decision = "deny", .reason = reason, .dst = dst};
}

AuditMatch ConnAllowed(const std::string& name, const std::string& name_src,
                       const std::string& upstream) {
  return {
      .ev = "conn", .decision = "allow", .name = name, .name_src = name_src, .upstream = upstream};
}

std::string Endpoint(const std::string& address, int port) {
  bool v6 = address.find(':') != std::string::npos;
  return (v6 ? "[" + address + "]" : address) + ":" + std::to_string(port);
}

void ExpectNetworkSummary(const nlohmann::json& run_result, size_t min_allowed, size_t min_denied,
                          const std::string& denied_name) {
  if (!run_result.is_object() || !run_result.contains("network")) {
    ADD_FAILURE() << "no `network` object in the result";
    return;
  }
  const auto& network = run_result["network"];
  EXPECT_GE(Int(network, "allowed"), static_cast<long>(min_allowed)) << network.dump();
  EXPECT_GE(Int(network, "denied"), static_cast<long>(min_denied)) << network.dump();
  if (denied_name.empty()) return;
  auto names = network.contains("denied_names") ? network["denied_names"] : nlohmann::json::array();
  EXPECT_NE(std::find(names.begin(), names.end(), denied_name), names.end()) << network.dump();
}

void ExpectBlockedByPolicy(const nlohmann::json& probe) {
  EXPECT_EQ(Int(probe, "status"), 403) << probe.dump();
  std::string body = Str(probe, "body");
  std::transform(body.begin(), body.end(), body.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  EXPECT_NE(body.find("policy"), std::string::npos)
      << "a 403 must say it was blocked by policy: " << probe.dump();
}

void ExpectReset(const nlohmann::json& probe) {
  EXPECT_EQ(Str(probe, "errno_name"), "ECONNRESET") << probe.dump();
}

}  // namespace sbx::testing
