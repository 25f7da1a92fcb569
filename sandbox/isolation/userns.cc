// Id mapping decisions and the parent's writes to /proc/<pid>/*_map.
#include "sandbox/isolation/userns.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <optional>
#include <string_view>
#include <tuple>
#include <utility>

#include "base/lines.h"
#include "base/small_file.h"
#include "base/str_cat.h"
#include "base/unique_fd.h"

namespace sbx {
namespace {

constexpr uint32_t kOverflowId = 65534;

Result<void> WriteProcFile(pid_t pid, const char* name, const std::string& content) {
  std::string path = StrCat({"/proc/", Decimal(static_cast<uint64_t>(pid)), "/", name});
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd) return SysError(ErrorCode::kSetupFailed, "open(" + path + ")");
  ssize_t n;
  do {
    n = ::write(fd.get(), content.data(), content.size());
  } while (n < 0 && errno == EINTR);
  if (n != static_cast<ssize_t>(content.size()))
    return SysError(ErrorCode::kSetupFailed,
                    "write(" + path + ", \"" + content.substr(0, content.size() - 1) + "\")");
  return Ok{};
}

}  // namespace

namespace {

std::string MapLines(bool root_mode, uint32_t setup_id, uint32_t host_id) {
  const std::string sandbox_line = StrCat({Decimal(kSandboxId), " ", Decimal(host_id), " 1\n"});
  return root_mode ? StrCat({"0 ", Decimal(setup_id), " 1\n", sandbox_line}) : sandbox_line;
}

bool Maps(const std::vector<IdRange>& ranges, uint32_t id) {
  for (const IdRange& range : ranges) {
    if (id >= range.inside && id - range.inside < range.count) return true;
  }
  return false;
}

// Root mode's {setup id, sandbox id} among the ids `ranges` map: the reserved pair when mapped
// (sbx's root is the host's), else the two highest mapped ids below 2^31 that are neither 0 nor an
// overflow id (a user-namespaced container's range).
std::optional<std::pair<uint32_t, uint32_t>> RootModeIds(const std::vector<IdRange>& ranges) {
  if (Maps(ranges, kRootModeSetupHostId) && Maps(ranges, kRootModeHostId)) {
    return std::pair{kRootModeSetupHostId, kRootModeHostId};
  }
  auto usable = [&](uint32_t id) {
    return id != 0 && id != kOverflowId && id != kOverflowId + 1 && Maps(ranges, id);
  };
  std::optional<std::pair<uint32_t, uint32_t>> best;
  for (const IdRange& range : ranges) {
    if (range.count < 2) continue;
    uint64_t top = std::min<uint64_t>(uint64_t{range.inside} + range.count - 1, 0x7fffffffu);
    while (top > range.inside && !(usable(top) && usable(top - 1))) --top;
    if (top > range.inside && (!best || top > best->second)) {
      best = std::pair{static_cast<uint32_t>(top - 1), static_cast<uint32_t>(top)};
    }
  }
  return best;
}

std::string Describe(const std::vector<IdRange>& ranges) {
  std::string text;
  for (const IdRange& range : ranges) {
    if (!text.empty()) text += ", ";
    text += std::to_string(range.inside) + " " + std::to_string(range.outside) + " " +
            std::to_string(range.count);
  }
  return text.empty() ? "nothing" : text;
}

}  // namespace

std::string IdMapping::UidMapLine() const { return MapLines(root_mode, setup_uid, host_uid); }

std::string IdMapping::GidMapLine() const { return MapLines(root_mode, setup_gid, host_gid); }

namespace {

// One "INSIDE OUTSIDE COUNT" field: decimal digits, at most 2^32 - 1.
std::optional<uint32_t> ParseIdField(const std::string& field) {
  if (field.empty() || field.size() > 10 || field.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  const uint64_t value = std::stoull(field);
  if (value > 0xffffffffu) return std::nullopt;
  return static_cast<uint32_t>(value);
}

}  // namespace

// Parsed by hand, not with iostreams: this runs on every start, and iostreams' first use in a
// process faults in their code and locale (docs/performance.md has the cost).
Result<std::vector<IdRange>> ParseIdMap(const std::string& text) {
  std::vector<IdRange> ranges;
  for (const std::string_view line_text : SplitLines(text)) {
    const std::string line(line_text);
    std::vector<std::string> fields;
    for (size_t at = line.find_first_not_of(" \t"); at != std::string::npos;
         at = line.find_first_not_of(" \t", at)) {
      const size_t stop = std::min(line.find_first_of(" \t", at), line.size());
      fields.push_back(line.substr(at, stop - at));
      at = stop;
    }
    if (fields.empty()) continue;
    std::optional<uint32_t> inside, outside, count;
    if (fields.size() == 3) {
      inside = ParseIdField(fields[0]);
      outside = ParseIdField(fields[1]);
      count = ParseIdField(fields[2]);
    }
    if (!inside || !outside || !count)
      return MakeError(ErrorCode::kSetupFailed, "id map: not \"INSIDE OUTSIDE COUNT\": " + line);
    ranges.push_back(IdRange{*inside, *outside, *count});
  }
  return ranges;
}

Result<IdMapping> ComputeIdMapping(uid_t caller_uid, gid_t caller_gid,
                                   const std::vector<IdRange>& own_uids,
                                   const std::vector<IdRange>& own_gids) {
  IdMapping mapping;
  if (caller_uid == 0) {
    mapping.root_mode = true;
    auto uids = RootModeIds(own_uids);
    auto gids = RootModeIds(own_gids);
    if (!uids || !gids) {
      return MakeError(ErrorCode::kSetupFailed,
                       "user namespace: sbx runs as root in a user namespace that maps too few "
                       "ids for the sandbox (uid_map: " +
                           Describe(own_uids) + "; gid_map: " + Describe(own_gids) +
                           "); give the container more ids: Kubernetes' "
                           "hostUsers: false gives 65536, podman's --userns=auto at least 1024");
    }
    std::tie(mapping.setup_uid, mapping.host_uid) = *uids;
    std::tie(mapping.setup_gid, mapping.host_gid) = *gids;
  } else {
    mapping.host_uid = caller_uid;
    mapping.host_gid = caller_gid;
  }
  for (uint32_t id : {mapping.host_uid, mapping.host_gid}) {
    if (id == 0 || id == kOverflowId || id == 0xffffffffu) {
      return MakeError(ErrorCode::kInvalidInput,
                       "user namespace: refusing to map the sandbox user to host id " +
                           std::to_string(id) +
                           " (root or the overflow id); run sbx as root "
                           "or as an ordinary user");
    }
  }
  return mapping;
}

bool InInitialUserNamespace() {
  // The kernel numbers the initial user namespace's inode PROC_USER_INIT_INO and every other
  // namespace from PROC_DYNAMIC_FIRST (0xF0000000) up, so no other namespace has this number.
  constexpr ino_t kInitialUserNamespaceInode = 0xEFFFFFFDu;
  struct stat st {};
  return ::stat("/proc/self/ns/user", &st) == 0 && st.st_ino == kInitialUserNamespaceInode;
}

Result<IdMapping> ComputeIdMapping(uid_t caller_uid, gid_t caller_gid) {
  std::vector<IdRange> maps[2];
  if (caller_uid == 0 && InInitialUserNamespace()) {
    // Its maps are the identity over every id; reading and parsing them would say only that.
    maps[0] = maps[1] = {IdRange{0, 0, 4294967295u}};
  } else if (caller_uid == 0) {
    const char* paths[2] = {"/proc/self/uid_map", "/proc/self/gid_map"};
    for (int i = 0; i < 2; ++i) {
      SBX_ASSIGN_OR_RETURN(auto text, ReadSmallFile(paths[i]));
      auto parsed = ParseIdMap(text);
      if (!parsed) return parsed.error().Context(paths[i]);
      maps[i] = std::move(*parsed);
    }
  }
  return ComputeIdMapping(caller_uid, caller_gid, maps[0], maps[1]);
}

Result<void> WriteIdMapsInParent(pid_t child, const IdMapping& mapping) {
  if (!mapping.root_mode) SBX_TRY(WriteProcFile(child, "setgroups", "deny"));
  SBX_TRY(WriteProcFile(child, "uid_map", mapping.UidMapLine()));
  SBX_TRY(WriteProcFile(child, "gid_map", mapping.GidMapLine()));
  return Ok{};
}

}  // namespace sbx
