// Internals shared by cgroup.cc, cgroup_v1.cc, cgroup_v2.cc and cgroup_fs.cc: the run's
// directories, cgroupfs file access, the /proc/self tables, stale reaping and removal.
// Not part of the public API; include only from those files and their tests.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "base/small_file.h"
#include "base/unique_fd.h"
#include "sandbox/cgroup/cgroup.h"
#include "sandbox/policy/policy.h"

namespace sbx::cgroup_internal {

// The directories of one run. v2: all four controller fields name the one run directory.
// v1: each names the run directory in that controller's hierarchy (cpu and cpuacct are the
// same directory when co-mounted); empty when that controller is not used.
struct RunDirs {
  CgroupVersion version = CgroupVersion::kNone;
  CgroupEnforcement enforcement;
  std::string memory, pids, cpu, cpuacct;
  std::vector<std::string> created;  // distinct, in creation order; removed in reverse
  UniqueFd clone_into;               // v2 only
};

// ---- cgroupfs files ----
using ::sbx::ReadSmallFile;
// One write(2) of the whole value: cgroupfs parses each write on its own.
Result<void> WriteSmallFile(const std::string& path, const std::string& value);
bool PathExists(const std::string& path);
// The first number in a single-value file (memory.peak, cpuacct.usage, ...).
std::optional<uint64_t> ReadNumber(const std::string& path);
// N from the "key N" line of a flat-keyed file (memory.events, cpu.stat, oom_control, ...).
std::optional<uint64_t> ReadKeyedNumber(const std::string& path, const std::string& key);
// The non-empty pieces of `text` between separators: views into it, or copies.
std::vector<std::string_view> SplitViews(std::string_view text, char separator);
std::vector<std::string> SplitWords(std::string_view text, char separator);

// ---- /proc/self tables ----
struct MountEntry {
  std::string root;         // the part of the hierarchy that is mounted ("/" usually)
  std::string mount_point;  // with \040-style escapes decoded
  std::string fstype;
  std::vector<std::string> super_options;
};
// The cgroup and cgroup2 mounts of /proc/self/mountinfo; no other mount is ever looked at.
std::vector<MountEntry> ReadCgroupMounts();
std::vector<MountEntry> ParseCgroupMounts(std::string_view mountinfo);

struct CgroupMembership {
  std::string hierarchy_id;              // "0" for the v2 line
  std::vector<std::string> controllers;  // empty for v2
  std::string path;                      // relative to the hierarchy root
};
std::vector<CgroupMembership> ReadOwnCgroups();

// Both tables, read once for a decision that may try v2 and then v1.
struct CgroupTables {
  std::vector<MountEntry> mounts;
  std::vector<CgroupMembership> own;
};
CgroupTables ReadCgroupTables();

// The host path of `cgroup_path` through `mount`; nullopt when the mount does not show it.
std::optional<std::string> HostPathOf(const MountEntry& mount, const std::string& cgroup_path);

// ---- run directories ----
// "sbx-<getpid()>-<run_id>": stale reaping parses the pid back out of it.
std::string RunDirName(const std::string& run_id);
// The pid of a name that is exactly "sbx-<pid>-<valid run id>"; nullopt for anything else.
std::optional<pid_t> ParseRunDirPid(const std::string& name);
// Removes the sbx-<pid>-* children of `parent` whose runner is gone. Non-empty ones are
// killed first when `can_kill` (v2 cgroup.kill) and skipped otherwise. Best effort.
void ReapStale(const std::string& parent, bool can_kill);
// rmdir()s `dirs` in reverse order, retrying EBUSY for about a second; what is gone (or was
// already gone) is dropped from `dirs`, so calling it again is harmless.
Result<void> RemoveDirs(std::vector<std::string>& dirs);

// ---- one version each ----
// kUnavailable when that version cannot be used here (the caller may try the next one);
// kSetupFailed when a directory was created but a limit could not be written (nothing left).
Result<RunDirs> CreateV2(const std::string& run_id, const Limits& limits,
                         const std::string& v2_root, const CgroupTables& tables);
Result<RunDirs> CreateV1(const std::string& run_id, const Limits& limits, const CgroupTables& tables);
std::string DescribeV2(const std::string& v2_root, const CgroupTables& tables);
std::string DescribeV1(const CgroupTables& tables);

}  // namespace sbx::cgroup_internal
