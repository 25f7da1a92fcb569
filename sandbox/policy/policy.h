// Policy: the immutable description of what a sandboxed run may do, and its validation.
//
// A Policy is plain data. It is produced by LoadPolicyFile()/ParsePolicyJson() (strict JSON,
// see policies/SCHEMA.md) with CLI flags applied on top, or built by an API caller, then
// checked once where it enters: ValidPolicy::Check() runs ValidatePolicy() and yields the
// ValidPolicy that the launcher, the executors and the warm pool take without checking again.
// Every limit carries its unit in its name.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/error.h"
#include "netpolicy/network_rules.h"

namespace sbx {

enum class NetworkMode {
  kNone,       // a fresh network namespace with only `lo` up
  kHost,       // the host's network namespace: an explicit, loud opt-in
  kAllowlist,  // a fresh network namespace; sbx-netd lets through what network_allowlist allows
};

// Who isolates the program. Never chosen automatically: only a policy (or --isolation) says
// "outer".
enum class Isolation {
  kNamespaces,  // sbx's own: user, mount, pid, net, ipc, uts namespaces and an overlay root
  // The container runtime isolates (gVisor, Kata): no namespaces, no mounts; the program sees
  // the container's own root file system and network (so network must be kHost) and runs as
  // uid/gid 1000 with the rlimits, cgroup, seccomp filter, capability drop and no_new_privs of
  // any run; its whole process tree is killed at the end by the run's init, a subreaper.
  // Needs sbx to run as root (CAP_SETUID, CAP_SETGID, CAP_SETPCAP and CAP_KILL).
  kOuter,
};

// Layers a policy may accept losing (allow_degraded). Anything else is always required.
enum class Layer {
  kCgroup,   // resource limits through cgroups; without it rlimits stand in where they can
  kSeccomp,  // the syscall filter
};

struct Limits {
  uint64_t memory_bytes = 512ull << 20;
  uint32_t pids = 256;
  double cpus = 1.0;
  double timeout_seconds = 60.0;
  uint64_t output_bytes = 1ull << 20;  // per stream; head and tail are kept
  uint64_t file_size_bytes = 1ull << 30;
  uint32_t open_files = 1024;
  uint64_t rootfs_size_bytes = 256ull << 20;  // tmpfs above the read-only image
  uint64_t tmp_size_bytes = 256ull << 20;     // /tmp
};

struct Policy {
  Isolation isolation = Isolation::kNamespaces;
  NetworkMode network = NetworkMode::kNone;
  NetworkAllowlist network_allowlist;  // used only when network is kAllowlist
  Limits limits;
  std::map<std::string, std::string> env;  // added to the built-in allowlist
  std::vector<Layer> allow_degraded;
  // The root file system: a variant's name (`sbx image build --name`), "default" or empty for
  // the default image. Never a directory: a policy names what any host with the same cache has.
  // --image (and the executor's image options) win over it.
  std::string image;

  bool AllowsDegraded(Layer layer) const;
};

// Ranges each limit must fall in; messages quote them.
struct LimitRanges {
  static constexpr uint64_t kMinMemory = 8ull << 20;
  static constexpr uint32_t kMinPids = 4;
  static constexpr uint32_t kMaxPids = 65536;
  static constexpr double kMinCpus = 0.01;
  static constexpr double kMinTimeout = 0.01;
  static constexpr double kMaxTimeout = 7 * 24 * 3600.0;
  static constexpr uint64_t kMinOutput = 1024;
  static constexpr uint64_t kMaxOutput = 1ull << 30;
  static constexpr uint64_t kMinFileSize = 1024;
  static constexpr uint64_t kMaxFileSize = 1ull << 40;
  static constexpr uint32_t kMinOpenFiles = 16;
  static constexpr uint32_t kMaxOpenFiles = 1 << 20;
  static constexpr uint64_t kMinTmpfs = 1ull << 20;
  static constexpr size_t kMaxEnvValue = 32 * 1024;
  static constexpr size_t kMaxEnvEntries = 256;
};

// The host's RAM (MemTotal), the most limits.memory may be.
uint64_t HostMemoryBytes();

// Checks every field against its range and the host (memory and tmpfs sizes at most the
// host's RAM, cpus at most its CPU count). The error names the field and the fix.
Result<void> ValidatePolicy(const Policy& policy);

// A Policy that ValidatePolicy() accepted: the only kind a run is given (RunSpec, the executors'
// and the pool's options), so nothing downstream checks it again. Made only by Check(); read-only
// (a changed policy is a new one, checked again). The default Policy is valid, so a default
// ValidPolicy holds it.
class ValidPolicy {
 public:
  ValidPolicy() = default;
  // The error names the field and the fix, as ValidatePolicy's does.
  static Result<ValidPolicy> Check(Policy policy);

  const Policy& get() const { return policy_; }
  const Policy* operator->() const { return &policy_; }

 private:
  explicit ValidPolicy(Policy policy) : policy_(std::move(policy)) {}
  Policy policy_;
};

// Checks one environment entry: NAME matches [A-Za-z_][A-Za-z0-9_]*, the value has no NUL
// and is at most 32 KiB. `field` names it in the error ("env.FOO", "--env").
Result<void> ValidateEnvEntry(const std::string& field, const std::string& name,
                              const std::string& value);

const char* LayerName(Layer layer);
Result<Layer> ParseLayer(const std::string& name);
const char* NetworkModeName(NetworkMode mode);
const char* IsolationName(Isolation isolation);
// "namespaces" or "outer"; anything else is an error that starts with `field`.
Result<Isolation> ParseIsolation(const std::string& name, const std::string& field);

// Reads a strict JSON policy. Unknown keys, duplicate keys, wrong types, out-of-range values,
// comments, a BOM, more than 1 MiB or nesting deeper than 16 are errors naming the JSON path.
Result<Policy> ParsePolicyJson(const std::string& text);
Result<Policy> LoadPolicyFile(const std::string& path);

}  // namespace sbx
