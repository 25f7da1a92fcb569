// Policy validation: ranges, host bounds, environment entries; the network allowlist's own
// checks are netpolicy's (network_allowlist_json.h).
#include "sandbox/policy/policy.h"

#include <sys/sysinfo.h>
#include <unistd.h>

#include <algorithm>

#include "base/env_name.h"
#include "base/range_check.h"
#include "netpolicy/network_allowlist_json.h"
#include "netpolicy/network_proxy_env.h"
#include "sandbox/image/image.h"

namespace sbx {

// MemTotal of /proc/meminfo, from sysinfo(2): every start checks the policy, and reading
// meminfo through an ifstream made the kernel write its whole report and faulted in iostreams'
// code (docs/performance.md has the cost).
uint64_t HostMemoryBytes() {
  struct sysinfo info {};
  if (::sysinfo(&info) != 0 || info.totalram == 0) return 1ull << 40;
  return static_cast<uint64_t>(info.totalram) * (info.mem_unit == 0 ? 1 : info.mem_unit);
}

bool Policy::AllowsDegraded(Layer layer) const {
  return std::find(allow_degraded.begin(), allow_degraded.end(), layer) != allow_degraded.end();
}

Result<void> ValidateEnvEntry(const std::string& field, const std::string& name,
                              const std::string& value) {
  if (!IsEnvName(name)) {
    return InvalidInput(field + ": \"" + name +
                        "\" is not a valid variable name; use letters, digits and _ "
                        "(not starting with a digit)");
  }
  if (value.find('\0') != std::string::npos)
    return InvalidInput(field + ": the value of " + name + " contains a NUL byte");
  if (value.size() > LimitRanges::kMaxEnvValue) {
    return InvalidInput(field + ": the value of " + name + " is " + std::to_string(value.size()) +
                        " bytes; at most 32768 are allowed (pass large data as a file)");
  }
  return Ok{};
}

Result<void> ValidatePolicy(const Policy& policy) {
  const Limits& l = policy.limits;
  const uint64_t ram = HostMemoryBytes();
  const long cpus = std::max(1L, sysconf(_SC_NPROCESSORS_ONLN));
  SBX_TRY(CheckSize("limits.memory", l.memory_bytes, LimitRanges::kMinMemory, ram,
                    "at most the host's RAM"));
  SBX_TRY(CheckCount("limits.pids", l.pids, LimitRanges::kMinPids, LimitRanges::kMaxPids));
  if (!(l.cpus >= LimitRanges::kMinCpus && l.cpus <= static_cast<double>(cpus))) {
    return InvalidInput("limits.cpus: " + std::to_string(l.cpus) + " is out of range; use 0.01 to " +
                        std::to_string(cpus) + " (this host's CPU count)");
  }
  SBX_TRY(CheckSeconds("limits.timeout", l.timeout_seconds, LimitRanges::kMinTimeout,
                       LimitRanges::kMaxTimeout));
  SBX_TRY(CheckSize("limits.output", l.output_bytes, LimitRanges::kMinOutput,
                    LimitRanges::kMaxOutput, "per stream; head and tail are kept"));
  SBX_TRY(CheckSize("limits.file_size", l.file_size_bytes, LimitRanges::kMinFileSize,
                    LimitRanges::kMaxFileSize, "largest single file"));
  SBX_TRY(CheckCount("limits.open_files", l.open_files, LimitRanges::kMinOpenFiles,
                     LimitRanges::kMaxOpenFiles));
  SBX_TRY(CheckSize("limits.rootfs_size", l.rootfs_size_bytes, LimitRanges::kMinTmpfs, ram,
                    "at most the host's RAM"));
  SBX_TRY(CheckSize("limits.tmp_size", l.tmp_size_bytes, LimitRanges::kMinTmpfs, ram,
                    "at most the host's RAM"));
  if (policy.env.size() > LimitRanges::kMaxEnvEntries)
    return InvalidInput("env: more than 256 entries");
  for (const auto& [name, value] : policy.env) SBX_TRY(ValidateEnvEntry("env." + name, name, value));
  if (policy.isolation == Isolation::kOuter && policy.network != NetworkMode::kHost) {
    return InvalidInput(std::string("isolation: \"outer\" has no network namespace of its own, so ") +
                        "network \"" + NetworkModeName(policy.network) +
                        "\" cannot be enforced; the container runtime's network policy applies: set "
                        "\"network\": \"host\" (--network host)");
  }
  if (!policy.image.empty()) {
    auto valid = ValidateImageName(policy.image);
    if (!valid) return valid.error().Context("image");
    if (policy.isolation == Isolation::kOuter) {
      return InvalidInput("image: isolation \"outer\" runs the container's own root file system, not "
                          "an image; drop image from the policy");
    }
  }
  if (policy.network == NetworkMode::kAllowlist) {
    SBX_TRY(ValidateNetworkAllowlist(policy.network_allowlist));
    SBX_TRY(CheckProxyEnvConflicts(policy.network_allowlist.proxy_env, policy.env));
    for (const InjectRule& rule : policy.network_allowlist.inject) {
      if (policy.env.count(rule.sandbox_placeholder_env) != 0) {
        return InvalidInput("env." + rule.sandbox_placeholder_env +
                            ": also network.inject's sandbox_placeholder_env (rule \"" +
                            rule.name + "\"), which sets it to the placeholder; remove one");
      }
    }
  }
  return Ok{};
}

Result<ValidPolicy> ValidPolicy::Check(Policy policy) {
  SBX_TRY(ValidatePolicy(policy));
  return ValidPolicy(std::move(policy));
}

const char* LayerName(Layer layer) {
  switch (layer) {
    case Layer::kCgroup: return "cgroup";
    case Layer::kSeccomp: return "seccomp";
  }
  return "?";
}

Result<Layer> ParseLayer(const std::string& name) {
  if (name == "cgroup") return Layer::kCgroup;
  if (name == "seccomp") return Layer::kSeccomp;
  return InvalidInput("\"" + name + "\" is not a layer that may be degraded; use \"cgroup\" or \"seccomp\"");
}

const char* NetworkModeName(NetworkMode mode) {
  switch (mode) {
    case NetworkMode::kNone: return "none";
    case NetworkMode::kHost: return "host";
    case NetworkMode::kAllowlist: return "allowlist";
  }
  return "?";
}

const char* IsolationName(Isolation isolation) {
  return isolation == Isolation::kOuter ? "outer" : "namespaces";
}

Result<Isolation> ParseIsolation(const std::string& name, const std::string& field) {
  if (name == "namespaces") return Isolation::kNamespaces;
  if (name == "outer") return Isolation::kOuter;
  return InvalidInput(field + ": \"" + name +
                      "\" is not an isolation mode; use \"namespaces\" (the default) or \"outer\" "
                      "(only where the container runtime isolates, such as gVisor or Kata)");
}

}  // namespace sbx
