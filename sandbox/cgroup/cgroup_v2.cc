// cgroup v2: finding a delegated parent, creating the run's cgroup and writing its limits.
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>

#include "base/str_cat.h"
#include "sandbox/cgroup/cgroup_internal.h"

namespace sbx::cgroup_internal {
namespace {

constexpr const char* kControllers[] = {"memory", "pids", "cpu"};

struct V2Parent {
  std::string path;    // host path of the parent cgroup, empty when none was found
  std::string reason;  // why none was found
};

bool HasAllControllers(const std::string& dir) {
  auto text = ReadSmallFile(StrCat({dir, "/cgroup.subtree_control"}));
  if (!text) return false;
  std::vector<std::string> enabled = SplitWords(*text, ' ');
  for (std::string& word : enabled) {
    if (!word.empty() && word.back() == '\n') word.pop_back();
  }
  for (const char* controller : kControllers) {
    bool found = false;
    for (const std::string& word : enabled) found = found || word == controller;
    if (!found) return false;
  }
  return true;
}

// Where our own cgroup is in the v2 hierarchy mounted at the chosen root.
V2Parent FindParent(const std::string& v2_root, const CgroupTables& tables) {
  std::optional<MountEntry> mount;
  for (const MountEntry& entry : tables.mounts) {
    if (entry.fstype != "cgroup2") continue;
    if (v2_root.empty() || entry.mount_point == v2_root) {
      mount = entry;
      break;
    }
  }
  if (!mount && !v2_root.empty()) {
    struct statfs fs;
    if (::statfs(v2_root.c_str(), &fs) != 0 || fs.f_type != CGROUP2_SUPER_MAGIC)
      return {"", v2_root + " is not a cgroup2 mount"};
    mount = MountEntry{"/", v2_root, "cgroup2", {}};
  }
  if (!mount) return {"", "no cgroup2 mount in /proc/self/mountinfo"};

  std::optional<std::string> own_path;
  for (const CgroupMembership& line : tables.own) {
    if (line.hierarchy_id == "0" && line.controllers.empty()) own_path = line.path;
  }
  if (!own_path) return {"", "no 0:: line in /proc/self/cgroup"};
  std::optional<std::string> own = HostPathOf(*mount, *own_path);
  if (!own) return {"", "our cgroup " + *own_path + " is not visible under " + mount->mount_point};

  // Our own cgroup first (the root cgroup, or a delegated one we are allowed to populate),
  // then its parent (we are in a leaf whose parent delegates). We never enable controllers
  // ourselves: writing subtree_control of a cgroup sbx did not create is off limits.
  std::vector<std::string> candidates{*own};
  if (*own != mount->mount_point) candidates.push_back(own->substr(0, own->rfind('/')));
  std::string reason;
  for (const std::string& candidate : candidates) {
    if (!HasAllControllers(candidate)) {
      reason += (reason.empty() ? "" : "; ") + candidate +
                "/cgroup.subtree_control lacks one of memory pids cpu";
    } else if (::access(candidate.c_str(), W_OK) != 0) {
      reason +=
          (reason.empty() ? "" : "; ") + candidate + " is not writable: " + std::strerror(errno);
    } else {
      return {candidate, ""};
    }
  }
  return {"", reason};
}

std::string CpuMax(double cpus) {
  double quota = std::round(cpus * 100000.0);
  if (!(quota >= 1000.0)) quota = 1000.0;  // the kernel's minimum quota is 1 ms
  return StrCat({Decimal(static_cast<uint64_t>(quota)), " 100000"});
}

Result<void> WriteLimits(const std::string& dir, const Limits& limits) {
  SBX_TRY(WriteSmallFile(StrCat({dir, "/memory.max"}), StrCat({Decimal(limits.memory_bytes)})));
  // Swap would let the payload exceed memory.max unnoticed; absent when swap accounting is off.
  const std::string swap_max = StrCat({dir, "/memory.swap.max"});
  if (PathExists(swap_max)) SBX_TRY(WriteSmallFile(swap_max, "0"));
  // An OOM kills the whole run, not the one process the kernel picks: a tree with a member
  // missing (a test runner without its worker, a shell without its pipeline) would go on
  // running in an undefined state.
  SBX_TRY(WriteSmallFile(StrCat({dir, "/memory.oom.group"}), "1"));
  SBX_TRY(WriteSmallFile(StrCat({dir, "/pids.max"}), StrCat({Decimal(limits.pids)})));
  SBX_TRY(WriteSmallFile(StrCat({dir, "/cpu.max"}), CpuMax(limits.cpus)));
  return Ok{};
}

}  // namespace

Result<RunDirs> CreateV2(const std::string& run_id, const Limits& limits,
                         const std::string& v2_root, const CgroupTables& tables) {
  V2Parent parent = FindParent(v2_root, tables);
  if (parent.path.empty()) return MakeError(ErrorCode::kUnavailable, "cgroup v2: " + parent.reason);
  ReapStale(parent.path, /*can_kill=*/true);

  const std::string dir = StrCat({parent.path, "/", RunDirName(run_id)});
  if (::mkdir(dir.c_str(), 0755) != 0) {
    ErrorCode code = errno == EEXIST ? ErrorCode::kSetupFailed : ErrorCode::kUnavailable;
    return SysError(code, "cgroup v2: mkdir(" + dir + ")");
  }
  RunDirs dirs;
  dirs.version = CgroupVersion::kV2;
  dirs.memory = dirs.pids = dirs.cpu = dirs.cpuacct = dir;
  dirs.created.push_back(dir);
  Result<void> written = WriteLimits(dir, limits);
  if (written) {
    dirs.clone_into.reset(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!dirs.clone_into) written = SysError(ErrorCode::kSetupFailed, "open(" + dir + ")");
  }
  if (!written) {
    (void)RemoveDirs(dirs.created);
    return written.error().Context("cgroup v2");
  }
  dirs.enforcement = {CgroupVersion::kV2, true, true, true};
  return dirs;
}

std::string DescribeV2(const std::string& v2_root, const CgroupTables& tables) {
  V2Parent parent = FindParent(v2_root, tables);
  if (parent.path.empty()) return "v2 unusable: " + parent.reason;
  return "v2 at " + parent.path + ", controllers memory pids cpu delegated";
}

}  // namespace sbx::cgroup_internal
