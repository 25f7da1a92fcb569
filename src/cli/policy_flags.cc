// The policy flags shared by `sbx run` and `sbx agent`.
#include "src/cli/policy_flags.h"

#include "base/units.h"
#include "sandbox/image/image.h"

namespace sbx::cli {
namespace {

Result<void> ApplyNetworkFlag(const std::string& value, Policy& policy) {
  if (value != "none" && value != "host" && value != "allowlist")
    return InvalidInput("--network: use none, host or allowlist, not \"" + value + "\"");
  // Host networking would silently drop the rules; never widen an allowlist that way.
  if (value == "host" && policy.network == NetworkMode::kAllowlist &&
      !policy.network_allowlist.allow.empty()) {
    return InvalidInput(
        "--network host: the allow rules (from --allow or the policy) need --network allowlist; "
        "remove them or the --network host flag");
  }
  policy.network = value == "host"   ? NetworkMode::kHost
                   : value == "none" ? NetworkMode::kNone
                                     : NetworkMode::kAllowlist;
  return Ok{};
}

Result<void> ApplyAllowFlag(const std::string& value, Policy& policy) {
  if (policy.network == NetworkMode::kHost) {
    return InvalidInput("--allow " + value +
                        ": the network is host (from --network host or the policy), which "
                        "cannot enforce an allowlist; drop --network host");
  }
  SBX_ASSIGN_OR_RETURN(auto rule, ParseNetworkRule(value, "--allow"));
  if (policy.network != NetworkMode::kAllowlist) policy.network_allowlist = NetworkAllowlist{};
  policy.network = NetworkMode::kAllowlist;
  policy.network_allowlist.allow.push_back(std::move(rule));
  return Ok{};
}

}  // namespace

bool TakeFlagValue(int argc, char** argv, int& i, std::string& arg, std::string& value) {
  auto eq = arg.find('=');
  if (eq != std::string::npos) {
    value = arg.substr(eq + 1);
    arg = arg.substr(0, eq);
    return true;
  }
  if (i + 1 >= argc) return false;
  value = argv[++i];
  return true;
}

Result<ValidPolicy> ResolvePolicy(const std::string& policy_file, const PolicyFlags& flags) {
  Policy policy;
  if (!policy_file.empty()) {
    SBX_ASSIGN_OR_RETURN(auto loaded, LoadPolicyFile(policy_file));
    policy = std::move(loaded);
  }
  for (const auto& [flag, value] : flags) SBX_TRY(ApplyPolicyFlag(flag, value, policy));
  return ValidPolicy::Check(std::move(policy));
}

Result<std::string> ResolveRunImage(const std::string& given, const std::string& given_field,
                                    const Policy& policy) {
  if (policy.isolation == Isolation::kOuter) {
    // The program sees the container's own root file system (the policy's image is refused
    // by ValidatePolicy).
    if (!given.empty()) {
      return InvalidInput(given_field + ": isolation \"outer\" runs the container's own root file "
                          "system, not an image; drop " + given_field);
    }
    return std::string();
  }
  const bool from_policy = given.empty();
  auto image_dir = ResolveImageDir(from_policy ? policy.image : given);
  if (!image_dir) return image_dir.error().Context(from_policy ? "the policy's image" : given_field);
  return image_dir;
}

Result<void> ApplyPolicyFlag(const std::string& flag, const std::string& value, Policy& policy) {
  Limits& limits = policy.limits;
  if (flag == "--timeout") {
    auto seconds = ParseSeconds(value);
    if (!seconds) return seconds.error().Context(flag);
    limits.timeout_seconds = *seconds;
  } else if (flag == "--memory") {
    auto size = ParseSize(value);
    if (!size) return size.error().Context(flag);
    limits.memory_bytes = *size;
  } else if (flag == "--pids" || flag == "--cpus") {
    auto number = ParseSeconds(value);  // a plain non-negative decimal
    if (!number) return InvalidInput(flag + ": \"" + value + "\" is not a number");
    if (flag == "--cpus") {
      limits.cpus = *number;
    } else {
      if (*number != static_cast<double>(static_cast<uint32_t>(*number)))
        return InvalidInput(flag + ": \"" + value + "\" is not a whole number");
      limits.pids = static_cast<uint32_t>(*number);
    }
  } else if (flag == "--network") {
    SBX_TRY(ApplyNetworkFlag(value, policy));
  } else if (flag == "--isolation") {
    auto isolation = ParseIsolation(value, flag);
    if (!isolation) return isolation.error();
    policy.isolation = *isolation;
  } else if (flag == "--allow") {
    SBX_TRY(ApplyAllowFlag(value, policy));
  } else if (flag == "--env") {
    auto eq = value.find('=');
    if (eq == std::string::npos) return InvalidInput("--env " + value + ": use KEY=VALUE");
    std::string name = value.substr(0, eq);
    SBX_TRY(ValidateEnvEntry("--env", name, value.substr(eq + 1)));
    policy.env[name] = value.substr(eq + 1);
  } else if (flag == "--allow-degraded") {
    auto layer = ParseLayer(value);
    if (!layer) return layer.error().Context(flag);
    policy.allow_degraded.push_back(*layer);
  } else {
    return InvalidInput(flag + ": unknown flag; see --help");
  }
  return Ok{};
}

}  // namespace sbx::cli
