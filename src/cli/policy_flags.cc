// The policy flags shared by `sbx run` and `sbx agent`.
#include "src/cli/policy_flags.h"

#include "sandbox/units.h"

namespace sbx::cli {

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
    if (value != "none" && value != "host") return InvalidInput("--network: use none or host, not \"" + value + "\"");
    policy.network = value == "host" ? NetworkMode::kHost : NetworkMode::kNone;
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
