// What the strict JSON readers of policies share (the policy loader in sandbox/policy, the
// allowlist's readers here, which sbx-netd runs too): parsing with duplicate-key and depth
// checks, and typed field readers whose errors name the JSON path. Also read by the team file
// loader (src/agent/team_file.cc). nlohmann exceptions never leave the .cc files that use these.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "base/error.h"
#include "netpolicy/network_rules.h"

namespace sbx::policy_json {

using nlohmann::json;

inline constexpr size_t kMaxPolicyBytes = 1 << 20;

// Parses `text` strictly: at most 1 MiB, no byte-order mark, no comments, no duplicate key,
// nesting at most 16 deep. Errors start with "<what>: ".
Result<json> ParseStrict(const std::string& text, const std::string& what);

// "<field>: expected <expected>, got <type> <value>".
Error FieldError(const std::string& field, const std::string& expected, const json& got);
// Every key of `object` is in `allowed`; `where` is the object's path ("" for the top level).
Result<void> CheckKeys(const std::string& where, const json& object,
                       const std::set<std::string>& allowed);

Result<uint64_t> SizeField(const std::string& field, const json& value);     // "512M" or bytes
Result<uint32_t> Count32Field(const std::string& field, const json& value);  // whole, >= 0
Result<double> SecondsField(const std::string& field, const json& value);    // finite, >= 0

// The keys an allowlist and a policy's allowlist-mode network object share, read into `out`
// (network_allowlist_json.cc); the caller checks that `object` has no other key.
Result<void> ReadNetworkAllowlist(const json& object, NetworkAllowlist& out);
// network.inject (network_inject_json.cc): each rule read strictly; the checks that need the
// allow rules too are in ValidateInjectRules.
Result<void> ReadInjectRules(const json& list, std::vector<InjectRule>& out);
// network.extra_ca_files / network.upstream_ca_files: absolute paths, read at run start.
Result<void> ReadCaFiles(const std::string& field, const json& list, std::vector<std::string>& out);

}  // namespace sbx::policy_json
