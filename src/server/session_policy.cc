// TightenPolicy and CheckTightens.
#include "src/server/session_policy.h"

#include <algorithm>
#include <cerrno>
#include <nlohmann/json.hpp>

namespace sbx::server {
namespace {

Error Looser(const std::string& field, const std::string& asked, const std::string& allowed) {
  // EPERM tells a caller "refused by the server's policy" from "not a valid policy".
  return Error{ErrorCode::kInvalidInput, EPERM,
               "policy." + field + ": " + asked + " is looser than the server's " + allowed +
                   "; a session's policy may only tighten the server's (ask the server's "
                   "operator for a wider --policy)"};
}

template <typename T>
Result<void> AtMost(const std::string& field, T asked, T allowed) {
  if (asked <= allowed) return {};
  return Looser(field, std::to_string(asked), std::to_string(allowed));
}

bool Contains(const std::vector<NetworkRule>& rules, const NetworkRule& rule) {
  return std::find(rules.begin(), rules.end(), rule) != rules.end();
}

Result<void> NetworkTightens(const Policy& server, const Policy& requested) {
  if (requested.network == NetworkMode::kNone) return {};
  if (requested.network == NetworkMode::kHost && server.network != NetworkMode::kHost) {
    return Looser("network", "\"host\"", std::string("\"") + NetworkModeName(server.network) + "\"");
  }
  if (requested.network == NetworkMode::kHost) return {};
  if (server.network != NetworkMode::kAllowlist) {
    return Looser("network", "an allowlist", std::string("\"") + NetworkModeName(server.network) + "\"");
  }
  const NetworkAllowlist& mine = server.network_allowlist;
  const NetworkAllowlist& asked = requested.network_allowlist;
  for (size_t i = 0; i < asked.allow.size(); ++i) {
    if (!Contains(mine.allow, asked.allow[i])) {
      return Looser("network.allow[" + std::to_string(i) + "]", "a rule", "allow list, which lacks it");
    }
  }
  for (size_t i = 0; i < mine.deny.size(); ++i) {
    if (!Contains(asked.deny, mine.deny[i])) {
      return Looser("network.deny", "a list without the server's deny[" + std::to_string(i) + "]",
                    "deny list");
    }
  }
  for (size_t i = 0; i < asked.allow_private.size(); ++i) {
    if (!Contains(mine.allow_private, asked.allow_private[i])) {
      return Looser("network.allow_private[" + std::to_string(i) + "]", "a rule",
                    "allow_private, which lacks it");
    }
  }
  // These name files and secrets of the server's host: a client may not choose them.
  if (asked.inject != mine.inject) return Looser("network.inject", "a different list", "inject");
  if (asked.extra_ca_files != mine.extra_ca_files || asked.upstream_ca_files != mine.upstream_ca_files) {
    return Looser("network.extra_ca_files/upstream_ca_files", "different host files", "files");
  }
  if (asked.proxy_env && !mine.proxy_env) return Looser("network.proxy_env", "true", "false");
  SBX_TRY(AtMost("network.limits.max_connections", asked.limits.max_connections, mine.limits.max_connections));
  SBX_TRY(AtMost("network.limits.egress_bytes", asked.limits.egress_bytes_max, mine.limits.egress_bytes_max));
  SBX_TRY(AtMost("network.limits.connect_timeout", asked.limits.connect_timeout_seconds,
                 mine.limits.connect_timeout_seconds));
  return AtMost("network.limits.idle_timeout", asked.limits.idle_timeout_seconds,
                mine.limits.idle_timeout_seconds);
}

}  // namespace

Result<void> CheckTightens(const Policy& server, const Policy& requested) {
  const Limits& mine = server.limits;
  const Limits& asked = requested.limits;
  SBX_TRY(AtMost("limits.memory", asked.memory_bytes, mine.memory_bytes));
  SBX_TRY(AtMost("limits.pids", asked.pids, mine.pids));
  SBX_TRY(AtMost("limits.cpus", asked.cpus, mine.cpus));
  SBX_TRY(AtMost("limits.timeout", asked.timeout_seconds, mine.timeout_seconds));
  SBX_TRY(AtMost("limits.output", asked.output_bytes, mine.output_bytes));
  SBX_TRY(AtMost("limits.file_size", asked.file_size_bytes, mine.file_size_bytes));
  SBX_TRY(AtMost("limits.open_files", asked.open_files, mine.open_files));
  SBX_TRY(AtMost("limits.rootfs_size", asked.rootfs_size_bytes, mine.rootfs_size_bytes));
  SBX_TRY(AtMost("limits.tmp_size", asked.tmp_size_bytes, mine.tmp_size_bytes));
  if (requested.isolation != server.isolation) {
    return Error{ErrorCode::kInvalidInput, EPERM,
                 std::string("policy.isolation: a session keeps the server's isolation (\"") +
                     IsolationName(server.isolation) + "\"); drop isolation from the session's policy"};
  }
  for (Layer layer : requested.allow_degraded) {
    if (!server.AllowsDegraded(layer)) {
      return Looser("allow_degraded", "a layer", "allow_degraded, which keeps it required");
    }
  }
  return NetworkTightens(server, requested);
}

Result<ValidPolicy> TightenPolicy(const Policy& server, const std::string& inline_json) {
  SBX_ASSIGN_OR_RETURN(auto parsed, ParsePolicyJson(inline_json));
  // ParsePolicyJson accepted it, so it is an object of known keys.
  const auto given = nlohmann::json::parse(inline_json);
  Policy policy = parsed;
  const auto given_limits = given.value("limits", nlohmann::json::object());
  auto keep = [&](const char* key, auto& field, const auto& server_value) {
    if (!given_limits.contains(key)) field = server_value;
  };
  keep("memory", policy.limits.memory_bytes, server.limits.memory_bytes);
  keep("pids", policy.limits.pids, server.limits.pids);
  keep("cpus", policy.limits.cpus, server.limits.cpus);
  keep("timeout", policy.limits.timeout_seconds, server.limits.timeout_seconds);
  keep("output", policy.limits.output_bytes, server.limits.output_bytes);
  keep("file_size", policy.limits.file_size_bytes, server.limits.file_size_bytes);
  keep("open_files", policy.limits.open_files, server.limits.open_files);
  keep("rootfs_size", policy.limits.rootfs_size_bytes, server.limits.rootfs_size_bytes);
  keep("tmp_size", policy.limits.tmp_size_bytes, server.limits.tmp_size_bytes);
  if (!given.contains("network")) {
    policy.network = server.network;
    policy.network_allowlist = server.network_allowlist;
  }
  if (!given.contains("isolation")) policy.isolation = server.isolation;
  // Any variant in the server's cache may be named: each runs under the same isolation, and a
  // policy never names a directory.
  if (!given.contains("image")) policy.image = server.image;
  if (!given.contains("allow_degraded")) policy.allow_degraded = server.allow_degraded;
  for (const auto& [name, value] : server.env) policy.env.emplace(name, value);
  SBX_TRY(CheckTightens(server, policy));
  return ValidPolicy::Check(std::move(policy));
}

}  // namespace sbx::server
