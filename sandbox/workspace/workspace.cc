// Workspace validation and temporary workspaces.
#include "sandbox/workspace/workspace.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <vector>

#include "base/remove_tree.h"
#include "sandbox/image/image.h"

namespace sbx {
namespace {

constexpr const char* kForbiddenTrees[] = {"/proc", "/sys", "/dev", "/etc", "/usr", "/boot",
                                           "/run", "/bin", "/sbin", "/lib", "/lib64"};
constexpr const char* kForbiddenExact[] = {"/", "/home", "/root", "/var", "/tmp", "/var/tmp"};

bool IsUnder(const std::string& path, const std::string& tree) {
  return path == tree || (path.size() > tree.size() && path.compare(0, tree.size(), tree) == 0 &&
                          path[tree.size()] == '/');
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

constexpr time_t kStaleWorkspaceSeconds = 60;

}  // namespace

void RemoveStaleRunDirectories(const std::string& base, const std::string& prefix) {
  DIR* dir = ::opendir(base.c_str());
  if (dir == nullptr) return;
  std::vector<std::string> stale;
  const std::string pattern = prefix + "%lu-%15s";
  while (struct dirent* entry = ::readdir(dir)) {
    // Names are <prefix><pid>-XXXXXX; anything else is not ours to touch.
    unsigned long pid = 0;
    char rest[16];
    if (std::strncmp(entry->d_name, prefix.c_str(), prefix.size()) == 0 &&
        std::sscanf(entry->d_name, pattern.c_str(), &pid, rest) == 2 && std::strlen(rest) == 6 &&
        !ProcessAlive(static_cast<pid_t>(pid)))
      stale.emplace_back(entry->d_name);
  }
  ::closedir(dir);
  for (const auto& name : stale) {
    // A pid is only a hint: a runner in another pid namespace that shares this directory has
    // pids that mean nothing here. Its workspace is locked for as long as it is in use, and
    // it is young between its mkdtemp and its lock: one changed in the last minute is left to
    // a later sweep. A time in the future does not protect it (the sandbox's code owns the
    // directory and can set its mtime to any date).
    UniqueFd lock(::open((base + "/" + name).c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!lock || ::flock(lock.get(), LOCK_EX | LOCK_NB) != 0) continue;
    struct stat st;
    if (::fstat(lock.get(), &st) != 0) continue;
    // Against the fine-grained clock: time(2) reads the coarse one, which lags the fine-grained
    // timestamps the kernel may give a directory it just made, so a workspace made that instant
    // could look dated ahead, and be swept.
    struct timespec now {};
    ::clock_gettime(CLOCK_REALTIME, &now);
    const time_t age = now.tv_sec - st.st_mtim.tv_sec - (now.tv_nsec < st.st_mtim.tv_nsec ? 1 : 0);
    if (age >= 0 && age < kStaleWorkspaceSeconds) continue;
    (void)RemoveTree(base + "/" + name);
  }
}


Result<std::string> StateDirectory() {
  uid_t uid = ::geteuid();
  // Absolute paths only: TMPDIR and HOME of the runner may be hostile.
  std::string path = uid == 0 ? "/var/tmp/sbx" : "/tmp/sbx-" + std::to_string(uid);
  SBX_TRY(EnsurePrivateDir(path));
  return path;
}

Result<std::string> RequireCanonicalPath(const std::string& field, const std::string& path,
                                         const std::string& missing_hint) {
  if (path.empty() || path[0] != '/') return InvalidInput(field + ": use an absolute path");
  char* resolved = ::realpath(path.c_str(), nullptr);
  if (resolved == nullptr) return SysError(ErrorCode::kInvalidInput, field + missing_hint);
  std::string canonical(resolved);
  std::free(resolved);
  if (canonical != path && canonical + "/" != path) {
    return InvalidInput(field + ": resolves to " + canonical +
                        " (a symlink or ..); pass the real directory");
  }
  return canonical;
}

Result<Workspace> OpenWorkspace(const std::string& path) {
  const std::string field = "--workspace " + path;
  SBX_ASSIGN_OR_RETURN(auto resolved, RequireCanonicalPath(field, path));
  const std::string& canonical = resolved;
  for (const char* tree : kForbiddenTrees) {
    if (IsUnder(canonical, tree)) return InvalidInput(field + ": system directories cannot be a workspace");
  }
  for (const char* exact : kForbiddenExact) {
    if (canonical == exact) return InvalidInput(field + ": too broad; use a directory of its own");
  }
  // Never overlapping sbx's own directories: a program could rewrite the image every later
  // run mounts, or another run's state.
  std::vector<std::string> own = {::geteuid() == 0 ? "/var/tmp/sbx" : "/tmp/sbx-" + std::to_string(::geteuid())};
  if (auto cache = ImageCacheDir(); cache) own.push_back(cache->substr(0, cache->rfind('/')));
  for (const auto& dir : own) {
    if (IsUnder(canonical, dir) || IsUnder(dir, canonical))
      return InvalidInput(field + ": overlaps sbx's own directory " + dir);
  }
  Workspace workspace;
  workspace.path = canonical;
  workspace.fd.reset(::open(canonical.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!workspace.fd) return SysError(ErrorCode::kInvalidInput, field + ": not a directory");
  // The checks above were on the string; confirm the directory opened is the one checked
  // (a path component swapped for a symlink in between would show here).
  char opened[4096];
  std::string link = "/proc/self/fd/" + std::to_string(workspace.fd.get());
  ssize_t n = ::readlink(link.c_str(), opened, sizeof(opened) - 1);
  if (n <= 0 || std::string(opened, static_cast<size_t>(n)) != canonical)
    return InvalidInput(field + ": changed while it was being opened; retry");
  // One run per workspace at a time (a second concurrent run is refused, not interleaved).
  workspace.lock.reset(::open(canonical.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!workspace.lock) return SysError(ErrorCode::kInvalidInput, field);
  if (::flock(workspace.lock.get(), LOCK_EX | LOCK_NB) != 0) {
    return errno == EWOULDBLOCK ? InvalidInput(field + ": in use by another sbx run")
                                : SysError(ErrorCode::kInvalidInput, "flock(" + canonical + ")");
  }
  return workspace;
}

Result<LockedRunDirectory> CreateLockedRunDirectory(const std::string& base, const std::string& prefix,
                                                    uid_t owner_uid, gid_t owner_gid) {
  RemoveStaleRunDirectories(base, prefix);
  std::string templ = base + "/" + prefix + std::to_string(::getpid()) + "-XXXXXX";
  if (::mkdtemp(templ.data()) == nullptr) return SysError(ErrorCode::kSetupFailed, "mkdtemp(" + templ + ")");
  LockedRunDirectory made{templ, UniqueFd(::open(templ.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC))};
  Result<void> set_up = Ok{};
  if (!made.lock || ::flock(made.lock.get(), LOCK_EX | LOCK_NB) != 0) {
    set_up = SysError(ErrorCode::kSetupFailed, "flock(" + templ + ")");
  } else if ((owner_uid != ::geteuid() || owner_gid != ::getegid()) &&
             ::chown(templ.c_str(), owner_uid, owner_gid) != 0) {
    set_up = SysError(ErrorCode::kSetupFailed, "chown(" + templ + ", " + std::to_string(owner_uid) + ")");
  }
  if (!set_up) {
    (void)RemoveTree(templ);
    return set_up.error();
  }
  return made;
}

Result<Workspace> CreateTemporaryWorkspace(uid_t owner_uid, gid_t owner_gid) {
  SBX_ASSIGN_OR_RETURN(auto base, StateDirectory());
  SBX_ASSIGN_OR_RETURN(auto made, CreateLockedRunDirectory(base, "ws-", owner_uid, owner_gid));
  Workspace workspace;
  workspace.path = made.path;
  workspace.temporary = true;
  // Held while the Workspace lives: RemoveStaleRunDirectories leaves a locked workspace alone.
  workspace.lock = std::move(made.lock);
  workspace.fd.reset(::open(workspace.path.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!workspace.fd) {
    Error error = SysError(ErrorCode::kSetupFailed, "open(" + workspace.path + ")");
    (void)RemoveTree(workspace.path);
    return error;
  }
  return workspace;
}

}  // namespace sbx
