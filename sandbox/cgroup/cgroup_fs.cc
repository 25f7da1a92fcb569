// cgroupfs file access, the /proc/self mount and cgroup tables, stale reaping and rmdir.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <string_view>
#include <thread>

#include "base/lines.h"
#include "base/str_cat.h"
#include "sandbox/cgroup/cgroup_internal.h"

namespace sbx::cgroup_internal {
namespace {

// Undoes the octal escapes (\040 for space, \011, \012, \134) of /proc/self/mountinfo.
std::string DecodeMountField(std::string_view field) {
  std::string out;
  out.reserve(field.size());
  for (size_t i = 0; i < field.size(); ++i) {
    if (field[i] == '\\' && i + 3 < field.size()) {
      const std::string_view digits = field.substr(i + 1, 3);
      if (digits.find_first_not_of("01234567") == std::string_view::npos) {
        out.push_back(static_cast<char>((digits[0] - '0') * 64 + (digits[1] - '0') * 8 + (digits[2] - '0')));
        i += 3;
        continue;
      }
    }
    out.push_back(field[i]);
  }
  return out;
}

bool AllDigits(std::string_view text) {
  return !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
}

// A pid as the kernel prints it: digits, no sign, no leading zero, no overflow.
bool IsPidText(const std::string& text) {
  return AllDigits(text) && text.size() <= 7 && text[0] != '0';
}

bool IsEmptyCgroup(const std::string& dir) {
  auto procs = ReadSmallFile(dir + "/cgroup.procs");
  return procs && procs->find_first_not_of(" \n") == std::string::npos;
}

}  // namespace

Result<void> WriteSmallFile(const std::string& path, const std::string& value) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY));
  if (!fd) return SysError(ErrorCode::kSetupFailed, "open(" + path + ")");
  ssize_t n;
  do {
    n = ::write(fd.get(), value.data(), value.size());
  } while (n < 0 && errno == EINTR);
  if (n < 0) return SysError(ErrorCode::kSetupFailed, "write(" + path + ", \"" + value + "\")");
  if (static_cast<size_t>(n) != value.size())
    return MakeError(ErrorCode::kSetupFailed, "write(" + path + "): short write");
  return Ok{};
}

bool PathExists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

std::optional<uint64_t> ReadNumber(const std::string& path) {
  auto text = ReadSmallFile(path, 4096);
  if (!text || text->empty() || !std::isdigit(static_cast<unsigned char>((*text)[0])))
    return std::nullopt;
  return std::strtoull(text->c_str(), nullptr, 10);
}

std::optional<uint64_t> ReadKeyedNumber(const std::string& path, const std::string& key) {
  auto text = ReadSmallFile(path, 64 * 1024);
  if (!text) return std::nullopt;
  for (const std::string_view line : SplitLines(*text)) {
    const std::vector<std::string_view> words = SplitViews(line, ' ');
    if (words.size() == 2 && words[0] == key && AllDigits(words[1]))
      return std::strtoull(std::string(words[1]).c_str(), nullptr, 10);
  }
  return std::nullopt;
}

std::vector<std::string_view> SplitViews(std::string_view text, char separator) {
  std::vector<std::string_view> words;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(separator, start);
    if (end == std::string_view::npos) end = text.size();
    if (end > start) words.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return words;
}

std::vector<std::string> SplitWords(std::string_view text, char separator) {
  const std::vector<std::string_view> views = SplitViews(text, separator);
  return std::vector<std::string>(views.begin(), views.end());
}

std::vector<MountEntry> ParseCgroupMounts(std::string_view text) {
  std::vector<MountEntry> mounts;
  for (const std::string_view line : SplitLines(text)) {
    // id parent major:minor root mount_point options [optional...] - fstype source super
    // The filesystem type first: a run's start would otherwise split every other mount's line
    // only to drop it.
    const size_t dash = line.find(" - ");
    if (dash == std::string_view::npos) continue;
    const std::string_view after = line.substr(dash + 3);
    const std::string_view fstype = after.substr(0, after.find(' '));
    if (fstype != "cgroup" && fstype != "cgroup2") continue;
    const std::vector<std::string_view> before = SplitViews(line.substr(0, dash), ' ');
    const std::vector<std::string_view> type_source_super = SplitViews(after, ' ');
    if (before.size() < 6 || type_source_super.size() < 3) continue;
    MountEntry entry;
    entry.root = DecodeMountField(before[3]);
    entry.mount_point = DecodeMountField(before[4]);
    entry.fstype = std::string(fstype);
    entry.super_options = SplitWords(type_source_super[2], ',');
    mounts.push_back(std::move(entry));
  }
  return mounts;
}

std::vector<MountEntry> ReadCgroupMounts() {
  auto text = ReadSmallFile("/proc/self/mountinfo", 16 << 20);
  return text ? ParseCgroupMounts(*text) : std::vector<MountEntry>{};
}

std::vector<CgroupMembership> ReadOwnCgroups() {
  std::vector<CgroupMembership> out;
  auto text = ReadSmallFile("/proc/self/cgroup");
  if (!text) return out;
  for (const std::string_view line : SplitLines(*text)) {
    // "4:memory:/a/b" or "0::/a/b"; the path may itself contain ':'.
    size_t first = line.find(':');
    size_t second = first == std::string_view::npos ? first : line.find(':', first + 1);
    if (second == std::string_view::npos) continue;
    CgroupMembership entry;
    entry.hierarchy_id = std::string(line.substr(0, first));
    entry.controllers = SplitWords(line.substr(first + 1, second - first - 1), ',');
    entry.path = std::string(line.substr(second + 1));
    out.push_back(std::move(entry));
  }
  return out;
}

CgroupTables ReadCgroupTables() { return {ReadCgroupMounts(), ReadOwnCgroups()}; }

std::optional<std::string> HostPathOf(const MountEntry& mount, const std::string& cgroup_path) {
  if (cgroup_path.empty() || cgroup_path[0] != '/') return std::nullopt;
  // Paths outside our cgroup namespace show as "/../..": never follow them.
  if (cgroup_path.find("/..") != std::string::npos) return std::nullopt;
  std::string relative = cgroup_path;
  if (mount.root != "/") {
    if (cgroup_path.compare(0, mount.root.size(), mount.root) != 0) return std::nullopt;
    relative = cgroup_path.substr(mount.root.size());
    if (!relative.empty() && relative[0] != '/') return std::nullopt;
  }
  if (relative == "/") relative.clear();
  return mount.mount_point + relative;
}

std::string RunDirName(const std::string& run_id) {
  return StrCat({"sbx-", Decimal(static_cast<uint64_t>(::getpid())), "-", run_id});
}

std::optional<pid_t> ParseRunDirPid(const std::string& name) {
  if (name.compare(0, 4, "sbx-") != 0) return std::nullopt;
  size_t dash = name.find('-', 4);
  if (dash == std::string::npos) return std::nullopt;
  const std::string pid_text = name.substr(4, dash - 4);
  if (!IsPidText(pid_text) || !IsValidRunId(name.substr(dash + 1))) return std::nullopt;
  long long pid = std::strtoll(pid_text.c_str(), nullptr, 10);
  if (pid <= 0 || pid > (1 << 22)) return std::nullopt;  // PID_MAX_LIMIT
  return static_cast<pid_t>(pid);
}

void ReapStale(const std::string& parent, bool can_kill) {
  DIR* dir = ::opendir(parent.c_str());
  if (dir == nullptr) return;
  std::vector<std::string> stale;
  while (struct dirent* entry = ::readdir(dir)) {
    if (entry->d_type != DT_DIR) continue;
    std::optional<pid_t> pid = ParseRunDirPid(entry->d_name);
    // /proc/<pid> rather than kill(pid, 0): EPERM would hide a live runner of another user.
    // A reused pid only delays reaping to a later run; it never removes a live run's cgroup.
    if (!pid || PathExists("/proc/" + std::to_string(*pid))) continue;
    stale.push_back(parent + "/" + entry->d_name);
  }
  ::closedir(dir);
  for (std::string& path : stale) {
    if (!IsEmptyCgroup(path)) {
      if (!can_kill) continue;  // v1 cannot kill by cgroup; leave it to the operator
      (void)WriteSmallFile(path + "/cgroup.kill", "1");
    }
    std::vector<std::string> one{path};
    (void)RemoveDirs(one);
  }
}

Result<void> RemoveDirs(std::vector<std::string>& dirs) {
  // After the last process of a cgroup is reaped the kernel may still hold it for a few
  // milliseconds (EBUSY) while the exit finishes: retry briefly instead of leaking it.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  while (!dirs.empty()) {
    const std::string& path = dirs.back();
    if (::rmdir(path.c_str()) == 0 || errno == ENOENT) {
      dirs.pop_back();
      continue;
    }
    int err = errno;
    if (err != EBUSY || std::chrono::steady_clock::now() >= deadline)
      return SysError(ErrorCode::kIo, "rmdir(" + path + ")", err);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return Ok{};
}

}  // namespace sbx::cgroup_internal
