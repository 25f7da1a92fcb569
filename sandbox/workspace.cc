// Workspace validation, temporary workspaces and symlink-safe tree removal.
#include "sandbox/workspace.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace sbx {
namespace {

constexpr const char* kForbiddenTrees[] = {"/proc", "/sys", "/dev", "/etc", "/usr", "/boot",
                                           "/run", "/bin", "/sbin", "/lib", "/lib64"};
constexpr const char* kForbiddenExact[] = {"/", "/home", "/root", "/var", "/tmp", "/var/tmp"};

bool IsUnder(const std::string& path, const std::string& tree) {
  return path == tree || (path.size() > tree.size() && path.compare(0, tree.size(), tree) == 0 &&
                          path[tree.size()] == '/');
}

Result<void> RemoveTreeAt(int parent_fd, const char* name, int depth) {
  if (depth > 4096) return MakeError(ErrorCode::kIo, "RemoveTree: too deep");
  if (::unlinkat(parent_fd, name, 0) == 0 || errno == ENOENT) return Ok{};
  if (errno != EISDIR && errno != EPERM) return SysError(ErrorCode::kIo, std::string("unlink ") + name);
  int fd = ::openat(parent_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return SysError(ErrorCode::kIo, std::string("open ") + name);
  DIR* dir = ::fdopendir(fd);
  if (dir == nullptr) {
    ::close(fd);
    return SysError(ErrorCode::kIo, std::string("fdopendir ") + name);
  }
  std::vector<std::string> entries;
  while (struct dirent* entry = ::readdir(dir)) {
    if (std::strcmp(entry->d_name, ".") != 0 && std::strcmp(entry->d_name, "..") != 0)
      entries.emplace_back(entry->d_name);
  }
  Result<void> result = Ok{};
  for (const auto& entry : entries) {
    auto removed = RemoveTreeAt(::dirfd(dir), entry.c_str(), depth + 1);
    if (!removed && result) result = removed;
  }
  ::closedir(dir);
  if (::unlinkat(parent_fd, name, AT_REMOVEDIR) != 0 && errno != ENOENT && result)
    return SysError(ErrorCode::kIo, std::string("rmdir ") + name);
  return result;
}

Result<void> EnsurePrivateDir(const std::string& path) {
  if (::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST)
    return SysError(ErrorCode::kSetupFailed, "mkdir(" + path + ")");
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return SysError(ErrorCode::kSetupFailed, "lstat(" + path + ")");
  if (!S_ISDIR(st.st_mode) || st.st_uid != ::geteuid() || (st.st_mode & 077) != 0) {
    return MakeError(ErrorCode::kSetupFailed,
                     "state directory " + path + " is not a 0700 directory owned by uid " +
                         std::to_string(::geteuid()) + "; remove it and retry");
  }
  return Ok{};
}

bool ProcessAlive(pid_t pid) {
  return ::access(("/proc/" + std::to_string(pid)).c_str(), F_OK) == 0;
}

void RemoveStaleWorkspaces(const std::string& base) {
  DIR* dir = ::opendir(base.c_str());
  if (dir == nullptr) return;
  std::vector<std::string> stale;
  while (struct dirent* entry = ::readdir(dir)) {
    // Names are ws-<pid>-XXXXXX; anything else is not ours to touch.
    unsigned long pid = 0;
    char rest[16];
    if (std::sscanf(entry->d_name, "ws-%lu-%15s", &pid, rest) == 2 && std::strlen(rest) == 6 &&
        !ProcessAlive(static_cast<pid_t>(pid)))
      stale.emplace_back(entry->d_name);
  }
  ::closedir(dir);
  for (const auto& name : stale) (void)RemoveTree(base + "/" + name);
}

}  // namespace

Result<std::string> StateDirectory() {
  uid_t uid = ::geteuid();
  // Absolute paths only: TMPDIR and HOME of the runner may be hostile.
  std::string path = uid == 0 ? "/var/tmp/sbx" : "/tmp/sbx-" + std::to_string(uid);
  SBX_TRY(EnsurePrivateDir(path));
  return path;
}

Result<Workspace> OpenWorkspace(const std::string& path) {
  const std::string field = "--workspace " + path;
  if (path.empty() || path[0] != '/') return InvalidInput(field + ": use an absolute path");
  char* resolved = ::realpath(path.c_str(), nullptr);
  if (resolved == nullptr) return SysError(ErrorCode::kInvalidInput, field);
  std::string canonical(resolved);
  std::free(resolved);
  if (canonical != path && canonical + "/" != path) {
    return InvalidInput(field + ": resolves to " + canonical +
                        " (a symlink or ..); pass the real directory");
  }
  for (const char* tree : kForbiddenTrees) {
    if (IsUnder(canonical, tree)) return InvalidInput(field + ": system directories cannot be a workspace");
  }
  for (const char* exact : kForbiddenExact) {
    if (canonical == exact) return InvalidInput(field + ": too broad; use a directory of its own");
  }
  if (::geteuid() == 0 && IsUnder(canonical, "/var/tmp/sbx"))
    return InvalidInput(field + ": inside sbx's own state directory");
  Workspace workspace;
  workspace.path = canonical;
  workspace.fd.reset(::open(canonical.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!workspace.fd) return SysError(ErrorCode::kInvalidInput, field + ": not a directory");
  return workspace;
}

Result<Workspace> CreateTemporaryWorkspace(uid_t owner_uid, gid_t owner_gid) {
  auto base = StateDirectory();
  if (!base) return base.error();
  RemoveStaleWorkspaces(*base);
  std::string templ = *base + "/ws-" + std::to_string(::getpid()) + "-XXXXXX";
  if (::mkdtemp(templ.data()) == nullptr)
    return SysError(ErrorCode::kSetupFailed, "mkdtemp(" + templ + ")");
  Workspace workspace;
  workspace.path = templ;
  workspace.temporary = true;
  if (::geteuid() == 0 && ::chown(templ.c_str(), owner_uid, owner_gid) != 0) {
    Error error = SysError(ErrorCode::kSetupFailed, "chown(" + templ + ")");
    (void)RemoveTree(templ);
    return error;
  }
  workspace.fd.reset(::open(templ.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!workspace.fd) return SysError(ErrorCode::kSetupFailed, "open(" + templ + ")");
  return workspace;
}

Result<void> RemoveTree(const std::string& path) {
  auto slash = path.find_last_of('/');
  std::string parent = slash == 0 ? "/" : path.substr(0, slash);
  std::string name = path.substr(slash + 1);
  int parent_fd = ::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (parent_fd < 0) return SysError(ErrorCode::kIo, "open(" + parent + ")");
  auto result = RemoveTreeAt(parent_fd, name.c_str(), 0);
  ::close(parent_fd);
  if (!result) return result.error().Context("remove " + path);
  return Ok{};
}

}  // namespace sbx
