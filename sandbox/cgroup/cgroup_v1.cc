// cgroup v1: one run directory per hierarchy (memory, pids, cpu, cpuacct) and their limits.
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>

#include "base/str_cat.h"
#include "sandbox/cgroup/cgroup_internal.h"

namespace sbx::cgroup_internal {
namespace {

constexpr const char* kV1Controllers[] = {"memory", "pids", "cpu", "cpuacct"};

bool Contains(const std::vector<std::string>& words, const std::string& word) {
  for (const std::string& candidate : words) {
    if (candidate == word) return true;
  }
  return false;
}

// The host path of our own cgroup in `controller`'s hierarchy, or why there is none.
struct V1Parent {
  std::string path;
  std::string reason;
};

V1Parent FindParent(const std::vector<MountEntry>& mounts, const std::vector<CgroupMembership>& own,
                    const std::string& controller) {
  std::optional<std::string> own_path;
  for (const CgroupMembership& line : own) {
    if (Contains(line.controllers, controller)) own_path = line.path;
  }
  if (!own_path) return {"", controller + ": not in /proc/self/cgroup"};
  for (const MountEntry& mount : mounts) {
    if (mount.fstype != "cgroup" || !Contains(mount.super_options, controller)) continue;
    if (std::optional<std::string> path = HostPathOf(mount, *own_path)) return {*path, ""};
  }
  return {"", controller + ": no cgroup v1 mount shows " + *own_path};
}

std::string CfsQuota(double cpus) {
  double quota = std::round(cpus * 100000.0);
  if (!(quota >= 1000.0)) quota = 1000.0;  // the kernel's minimum quota is 1 ms
  return StrCat({Decimal(static_cast<uint64_t>(quota))});
}

Result<void> WriteMemory(const std::string& dir, uint64_t bytes) {
  const std::string value = StrCat({Decimal(bytes)});
  SBX_TRY(WriteSmallFile(StrCat({dir, "/memory.limit_in_bytes"}), value));
  // memsw = memory + swap; equal to the memory limit means no swap. It must be written after
  // limit_in_bytes (the kernel requires memsw >= limit). Absent without swap accounting.
  const std::string memsw = StrCat({dir, "/memory.memsw.limit_in_bytes"});
  if (PathExists(memsw)) SBX_TRY(WriteSmallFile(memsw, value));
  (void)WriteSmallFile(StrCat({dir, "/memory.swappiness"}), "0");  // a preference; not enforcement
  return Ok{};
}

Result<void> WriteCpu(const std::string& dir, double cpus) {
  SBX_TRY(WriteSmallFile(StrCat({dir, "/cpu.cfs_period_us"}), "100000"));
  SBX_TRY(WriteSmallFile(StrCat({dir, "/cpu.cfs_quota_us"}), CfsQuota(cpus)));
  return Ok{};
}

std::string& DirFor(RunDirs& dirs, const std::string& controller) {
  if (controller == "memory") return dirs.memory;
  if (controller == "pids") return dirs.pids;
  if (controller == "cpu") return dirs.cpu;
  return dirs.cpuacct;
}

}  // namespace

Result<RunDirs> CreateV1(const std::string& run_id, const Limits& limits, const CgroupTables& tables) {
  const std::vector<MountEntry>& mounts = tables.mounts;
  const std::vector<CgroupMembership>& own = tables.own;
  RunDirs dirs;
  dirs.version = CgroupVersion::kV1;
  std::string reasons;
  auto note = [&reasons](const std::string& reason) {
    reasons += (reasons.empty() ? "" : "; ") + reason;
  };
  auto fail = [&dirs](const Error& error) {
    (void)RemoveDirs(dirs.created);
    return error.Context("cgroup v1");
  };

  for (const char* controller : kV1Controllers) {
    V1Parent parent = FindParent(mounts, own, controller);
    if (parent.path.empty()) {
      note(parent.reason);
      continue;
    }
    const std::string dir = StrCat({parent.path, "/", RunDirName(run_id)});
    bool already_ours = false;  // cpu and cpuacct co-mounted share one directory
    for (const std::string& created : dirs.created) already_ours = already_ours || created == dir;
    if (!already_ours) {
      ReapStale(parent.path, /*can_kill=*/false);
      if (::mkdir(dir.c_str(), 0755) != 0) {
        if (errno == EEXIST) return fail(SysError(ErrorCode::kSetupFailed, "mkdir(" + dir + ")"));
        note(SysError(ErrorCode::kUnavailable, controller + std::string(": mkdir(") + dir + ")")
                 .message);
        continue;
      }
      dirs.created.push_back(dir);
    }
    DirFor(dirs, controller) = dir;
  }

  if (dirs.memory.empty() && dirs.pids.empty() && dirs.cpu.empty()) {
    (void)RemoveDirs(dirs.created);  // a lone cpuacct directory enforces nothing
    return MakeError(ErrorCode::kUnavailable, "cgroup v1: " + reasons);
  }
  if (!dirs.memory.empty()) {
    if (auto r = WriteMemory(dirs.memory, limits.memory_bytes); !r) return fail(r.error());
    dirs.enforcement.memory = true;
  }
  if (!dirs.pids.empty()) {
    const std::string pids_max = StrCat({Decimal(limits.pids)});
    if (auto r = WriteSmallFile(StrCat({dirs.pids, "/pids.max"}), pids_max); !r)
      return fail(r.error());
    dirs.enforcement.pids = true;
  }
  if (!dirs.cpu.empty()) {
    if (auto r = WriteCpu(dirs.cpu, limits.cpus); !r) return fail(r.error());
    dirs.enforcement.cpu = true;
  }
  dirs.enforcement.version = CgroupVersion::kV1;
  return dirs;
}

std::string DescribeV1(const CgroupTables& tables) {
  const std::vector<MountEntry>& mounts = tables.mounts;
  const std::vector<CgroupMembership>& own = tables.own;
  std::string out = "v1:";
  for (const char* controller : kV1Controllers) {
    V1Parent parent = FindParent(mounts, own, controller);
    if (parent.path.empty()) {
      out += std::string(" ") + controller + " unusable (" + parent.reason + "),";
    } else {
      bool writable = ::access(parent.path.c_str(), W_OK) == 0;
      out += std::string(" ") + controller + " at " + parent.path +
             (writable ? "," : " (not writable),");
    }
  }
  out.pop_back();
  return out;
}

}  // namespace sbx::cgroup_internal
