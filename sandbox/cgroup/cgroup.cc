// RunCgroup: picks cgroup v2, then v1, and owns the run's directories until they are removed.
#include "sandbox/cgroup/cgroup.h"

#include <sys/random.h>

#include <atomic>
#include <cstring>
#include <utility>

#include "base/ascii.h"
#include "base/str_cat.h"
#include "sandbox/cgroup/cgroup_internal.h"

namespace sbx {

using cgroup_internal::RunDirs;

struct RunCgroup::State {
  RunDirs dirs;
};

Result<RunCgroup> RunCgroup::CreateInParent(const std::string& run_id, const Limits& limits,
                                            const CgroupOptions& options) {
  if (!IsValidRunId(run_id))
    return InvalidInput("run id \"" + run_id + "\" must match [A-Za-z0-9-]{1,64}");
  std::string tried;
  const cgroup_internal::CgroupTables tables = cgroup_internal::ReadCgroupTables();
  auto adopt = [](RunDirs dirs) {
    RunCgroup cgroup;
    cgroup.state_ = new State{std::move(dirs)};
    return cgroup;
  };
  if (options.try_v2) {
    Result<RunDirs> v2 = cgroup_internal::CreateV2(run_id, limits, options.v2_root, tables);
    if (v2) return adopt(std::move(v2).value());
    if (v2.error().code != ErrorCode::kUnavailable) return v2.error();
    tried = v2.error().message;
  }
  if (options.try_v1) {
    Result<RunDirs> v1 = cgroup_internal::CreateV1(run_id, limits, tables);
    if (v1) return adopt(std::move(v1).value());
    if (v1.error().code != ErrorCode::kUnavailable) return v1.error();
    tried += (tried.empty() ? "" : "; ") + v1.error().message;
  }
  if (tried.empty()) tried = "both cgroup v2 and v1 disabled by options";
  return MakeError(ErrorCode::kUnavailable,
                   "no usable cgroup (" + tried +
                       "); run as root, or delegate memory+pids+cpu to a cgroup v2 subtree "
                       "(systemd-run --user -p Delegate=yes ...)");
}

RunCgroup::RunCgroup(RunCgroup&& other) noexcept : state_(std::exchange(other.state_, nullptr)) {}

RunCgroup& RunCgroup::operator=(RunCgroup&& other) noexcept {
  if (this != &other) {
    this->~RunCgroup();
    state_ = std::exchange(other.state_, nullptr);
  }
  return *this;
}

RunCgroup::~RunCgroup() {
  if (state_ == nullptr) return;
  (void)RemoveInParent();
  delete state_;
  state_ = nullptr;
}

CgroupVersion RunCgroup::version() const { return state_->dirs.version; }

const CgroupEnforcement& RunCgroup::enforcement() const { return state_->dirs.enforcement; }

int RunCgroup::CloneIntoFd() const { return state_->dirs.clone_into.get(); }

Result<void> RunCgroup::AddProcessInParent(pid_t pid) {
  const std::string value = StrCat({Decimal(static_cast<uint64_t>(pid))});
  // v1 has one directory per hierarchy; cpuacct may share cpu's directory.
  for (const std::string& dir : state_->dirs.created) {
    SBX_TRY_CTX(cgroup_internal::WriteSmallFile(StrCat({dir, "/cgroup.procs"}), value),
                "cgroup: adding pid " + value);
  }
  return Ok{};
}

bool RunCgroup::KillAll() {
  if (state_->dirs.version != CgroupVersion::kV2) return false;
  // cgroup.kill (Linux 5.14) SIGKILLs every process, including ones forked concurrently.
  return static_cast<bool>(
      cgroup_internal::WriteSmallFile(StrCat({state_->dirs.memory, "/cgroup.kill"}), "1"));
}

CgroupUsage RunCgroup::ReadUsage() const {
  using cgroup_internal::ReadKeyedNumber;
  using cgroup_internal::ReadNumber;
  const RunDirs& dirs = state_->dirs;
  CgroupUsage usage;
  if (dirs.version == CgroupVersion::kV2) {
    usage.peak_memory_bytes = ReadNumber(StrCat({dirs.memory, "/memory.peak"}));  // Linux 5.19+
    if (auto usec = ReadKeyedNumber(StrCat({dirs.cpu, "/cpu.stat"}), "usage_usec"))
      usage.cpu_usage_ns = *usec * 1000;
    usage.oom_kills =
        ReadKeyedNumber(StrCat({dirs.memory, "/memory.events"}), "oom_kill").value_or(0);
  } else {
    if (!dirs.memory.empty()) {
      usage.peak_memory_bytes = ReadNumber(StrCat({dirs.memory, "/memory.max_usage_in_bytes"}));
      usage.oom_kills =
          ReadKeyedNumber(StrCat({dirs.memory, "/memory.oom_control"}), "oom_kill").value_or(0);
    }
    if (!dirs.cpuacct.empty())
      usage.cpu_usage_ns = ReadNumber(StrCat({dirs.cpuacct, "/cpuacct.usage"}));
  }
  if (!dirs.pids.empty())
    usage.pids_max_hits = ReadKeyedNumber(StrCat({dirs.pids, "/pids.events"}), "max").value_or(0);
  return usage;
}

Result<void> RunCgroup::RemoveInParent() {
  if (state_ == nullptr) return Ok{};
  state_->dirs.clone_into.reset();
  SBX_TRY_CTX(cgroup_internal::RemoveDirs(state_->dirs.created), "cgroup");
  return Ok{};
}

std::vector<std::string> RunCgroup::Paths() const { return state_->dirs.created; }

std::string DescribeCgroupSupport(const CgroupOptions& options) {
  std::string out;
  const cgroup_internal::CgroupTables tables = cgroup_internal::ReadCgroupTables();
  if (options.try_v2) out = cgroup_internal::DescribeV2(options.v2_root, tables);
  if (options.try_v1) out += (out.empty() ? "" : "; ") + cgroup_internal::DescribeV1(tables);
  return out.empty() ? "cgroups disabled by options" : out;
}

bool IsValidRunId(const std::string& id) { return IsAsciiAlnumDashName(id, 64); }

std::string NewRunId() {
  static std::atomic<unsigned> counter{0};
  unsigned char bytes[4] = {};
  if (::getrandom(bytes, sizeof(bytes), 0) != sizeof(bytes)) std::memset(bytes, 0, sizeof(bytes));
  // "<counter>-<8 hex digits>", formatted by hand: snprintf would bring printf's machinery
  // into every run's start.
  std::string id = std::to_string(counter++) + "-";
  constexpr char kHex[] = "0123456789abcdef";
  for (unsigned char byte : bytes) {
    id += kHex[byte >> 4];
    id += kHex[byte & 0xf];
  }
  return id;
}

}  // namespace sbx
