// Id mapping decisions and the parent's writes to /proc/<pid>/*_map.
#include "sandbox/userns.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "sandbox/unique_fd.h"

namespace sbx {
namespace {

constexpr uint32_t kOverflowId = 65534;

Result<void> WriteProcFile(pid_t pid, const char* name, const std::string& content) {
  std::string path = "/proc/" + std::to_string(pid) + "/" + name;
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd) return SysError(ErrorCode::kSetupFailed, "open(" + path + ")");
  ssize_t n;
  do {
    n = ::write(fd.get(), content.data(), content.size());
  } while (n < 0 && errno == EINTR);
  if (n != static_cast<ssize_t>(content.size()))
    return SysError(ErrorCode::kSetupFailed, "write(" + path + ", \"" + content.substr(0, content.size() - 1) + "\")");
  return Ok{};
}

}  // namespace

namespace {

std::string MapLines(bool root_mode, uint32_t host_id) {
  std::string setup = root_mode ? "0 " + std::to_string(kRootModeSetupHostId) + " 1\n" : "";
  return setup + std::to_string(kSandboxId) + " " + std::to_string(host_id) + " 1\n";
}

}  // namespace

std::string IdMapping::UidMapLine() const { return MapLines(root_mode, host_uid); }

std::string IdMapping::GidMapLine() const { return MapLines(root_mode, host_gid); }

Result<IdMapping> ComputeIdMapping(uid_t caller_uid, gid_t caller_gid) {
  IdMapping mapping;
  if (caller_uid == 0) {
    mapping.root_mode = true;
    mapping.host_uid = kRootModeHostId;
    mapping.host_gid = kRootModeHostId;
  } else {
    mapping.host_uid = caller_uid;
    mapping.host_gid = caller_gid;
  }
  for (uint32_t id : {mapping.host_uid, mapping.host_gid}) {
    if (id == 0 || id == kOverflowId || id == 0xffffffffu) {
      return MakeError(ErrorCode::kInvalidInput,
                       "user namespace: refusing to map the sandbox user to host id " +
                           std::to_string(id) + " (root or the overflow id); run sbx as root "
                           "or as an ordinary user");
    }
  }
  return mapping;
}

Result<void> WriteIdMapsInParent(pid_t child, const IdMapping& mapping) {
  if (!mapping.root_mode) SBX_TRY(WriteProcFile(child, "setgroups", "deny"));
  SBX_TRY(WriteProcFile(child, "uid_map", mapping.UidMapLine()));
  SBX_TRY(WriteProcFile(child, "gid_map", mapping.GidMapLine()));
  return Ok{};
}

}  // namespace sbx
