// Outer isolation, parent side: the runner check, the private area, environment, enforcement.
#include "sandbox/launch/outer_run.h"

#include <fcntl.h>
#include <linux/capability.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>

#include "base/remove_tree.h"
#include "sandbox/fs/fs_beneath.h"
#include "sandbox/isolation/userns.h"
#include "sandbox/launch/environment.h"
#include "sandbox/launch/process_tree.h"

namespace sbx {
namespace {

bool HasEffectiveCapability(int capability) {
  struct __user_cap_header_struct header {_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
  if (::syscall(SYS_capget, &header, data) != 0) return false;
  return (data[capability / 32].effective & (1u << (capability % 32))) != 0;
}

// mkdir + chown to the sandbox's ids, refusing anything that was there already.
Result<void> MakeOwnedDirectory(const std::string& path) {
  if (::mkdir(path.c_str(), 0700) != 0)
    return SysError(ErrorCode::kSetupFailed, "mkdir(" + path + ")");
  if (::chown(path.c_str(), kSandboxId, kSandboxId) != 0)
    return SysError(ErrorCode::kSetupFailed, "chown(" + path + ", 1000)");
  return Ok{};
}

}  // namespace

Result<void> CheckOuterSessionDriver(const std::string& path, const std::string& field) {
  const std::string what = field + " " + path;
  char real[PATH_MAX];
  if (path.empty() || path[0] != '/') return InvalidInput(what + ": give an absolute path");
  if (::realpath(path.c_str(), real) == nullptr) {
    return SysError(ErrorCode::kInvalidInput,
                    what + " (install sbx's session driver there, or give its path with " + field + ")");
  }
  struct stat st {};
  if (::stat(real, &st) != 0) return SysError(ErrorCode::kInvalidInput, what);
  if (!S_ISREG(st.st_mode)) return InvalidInput(what + ": not a regular file");
  if (st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH))) {
    return InvalidInput(what + ": sessions run as uid 1000 on this file system, so only root may be "
                        "able to change their driver; chown root and chmod go-w it");
  }
  if (!(st.st_mode & S_IROTH)) return InvalidInput(what + ": uid 1000 cannot read it; chmod o+r it");
  return CheckAncestorsGuarded(what, real, 0, "install the driver under a directory only root owns");
}

Result<void> CheckOuterRunner() {
  const char* needed = "isolation: \"outer\" needs sbx to run as root in the container "
                       "(CAP_SETUID, CAP_SETGID, CAP_SETPCAP and CAP_KILL): the program must run as "
                       "uid 1000, another identity than sbx's, so it cannot signal or trace sbx; ";
  for (int capability : {CAP_SETUID, CAP_SETGID, CAP_SETPCAP, CAP_KILL}) {
    if (!HasEffectiveCapability(capability))
      return InvalidInput(std::string(needed) + "run sbx as root (uid " +
                          std::to_string(::geteuid()) + " now)");
  }
  if (::geteuid() == kSandboxId || ::getegid() == kSandboxId)
    return InvalidInput(std::string(needed) + "run sbx as another uid and gid than 1000");
  if (int err = CheckChildrenListing()) {
    return Error{ErrorCode::kUnavailable, err,
                 "isolation: \"outer\": this kernel does not list children in "
                 "/proc/<pid>/task/<tid>/children (CONFIG_PROC_CHILDREN), which the run's init "
                 "needs to find and kill the program's whole tree; use isolation \"namespaces\""};
  }
  return Ok{};
}

Result<OuterArea> OuterArea::Create(bool with_workspace) {
  OuterArea area;
  // The areas of runners killed before their cleanup go first; ours stays locked for the run.
  auto made = CreateLockedRunDirectory("/tmp", "sbx-outer-", kSandboxId, kSandboxId);
  if (!made) return made.error().Context("the container needs a writable /tmp");
  area.path_ = made->path;
  area.lock_ = std::move(made->lock);
  area.tmp_dir_ = area.path_ + "/tmp";
  SBX_TRY(MakeOwnedDirectory(area.tmp_dir_));
  if (with_workspace) {
    Workspace workspace;
    workspace.path = area.path_ + "/workspace";
    SBX_TRY(MakeOwnedDirectory(workspace.path));
    workspace.fd.reset(
        ::open(workspace.path.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!workspace.fd) return SysError(ErrorCode::kSetupFailed, "open(" + workspace.path + ")");
    area.workspace_ = std::move(workspace);
  }
  return area;
}

OuterArea::OuterArea(OuterArea&& other) noexcept
    : path_(std::move(other.path_)),
      tmp_dir_(std::move(other.tmp_dir_)),
      lock_(std::move(other.lock_)),
      workspace_(std::move(other.workspace_)) {
  other.path_.clear();
}

OuterArea::~OuterArea() {
  workspace_.reset();
  if (!path_.empty()) (void)RemoveTree(path_);
}

std::vector<std::string> OuterEnvironment(const std::map<std::string, std::string>& policy_env,
                                          const std::string& home, const std::string& tmp_dir) {
  std::map<std::string, std::string> env = {
      {"HOME", home}, {"TMPDIR", tmp_dir}, {"MPLCONFIGDIR", tmp_dir + "/matplotlib"}};
  for (const auto& [name, value] : policy_env) env[name] = value;
  return BuildSandboxEnvironment(env);
}

}  // namespace sbx
