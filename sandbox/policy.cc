// Policy validation: ranges, host bounds and environment entries.
#include "sandbox/policy.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "sandbox/units.h"

namespace sbx {
namespace {

uint64_t HostMemoryBytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  uint64_t kib = 0;
  while (meminfo >> key) {
    if (key == "MemTotal:" && meminfo >> kib) return kib * 1024;
    meminfo.ignore(1 << 10, '\n');
  }
  return 1ull << 40;
}

Result<void> CheckSize(const char* field, uint64_t value, uint64_t min, uint64_t max,
                       const char* why_max) {
  if (value < min || value > max) {
    return InvalidInput(std::string(field) + ": " + FormatSize(value) + " is out of range; use " +
                        FormatSize(min) + " to " + FormatSize(max) + " (" + why_max + ")");
  }
  return Ok{};
}

Result<void> CheckCount(const char* field, uint64_t value, uint64_t min, uint64_t max) {
  if (value < min || value > max) {
    return InvalidInput(std::string(field) + ": " + std::to_string(value) +
                        " is out of range; use " + std::to_string(min) + " to " +
                        std::to_string(max));
  }
  return Ok{};
}

}  // namespace

bool Policy::AllowsDegraded(Layer layer) const {
  return std::find(allow_degraded.begin(), allow_degraded.end(), layer) != allow_degraded.end();
}

Result<void> ValidateEnvEntry(const std::string& field, const std::string& name,
                              const std::string& value) {
  bool name_ok = !name.empty() && (std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_');
  for (char c : name) name_ok = name_ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
  if (!name_ok) {
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
  if (!(l.timeout_seconds >= LimitRanges::kMinTimeout &&
        l.timeout_seconds <= LimitRanges::kMaxTimeout)) {
    return InvalidInput("limits.timeout: " + std::to_string(l.timeout_seconds) +
                        " s is out of range; use 0.01 to 604800 seconds");
  }
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
  return Ok{};
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
  return mode == NetworkMode::kHost ? "host" : "none";
}

}  // namespace sbx
