// Relative-path rules, openat2 beneath a directory (with an O_NOFOLLOW fallback), tree walks.
#include "sandbox/fs/fs_beneath.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "base/write_all.h"

namespace sbx {
namespace {

std::atomic<bool> force_fallback{false};

// Walks `path` one component at a time: each intermediate component is opened O_PATH |
// O_DIRECTORY | O_NOFOLLOW (a symlink gives ENOTDIR), the last with O_NOFOLLOW.
int OpenPerComponent(int dir_fd, const std::vector<std::string>& components, int flags,
                     mode_t mode) {
  struct stat root {};
  if (::fstat(dir_fd, &root) != 0) return -1;
  UniqueFd current;
  int at = dir_fd;
  for (size_t i = 0; i + 1 < components.size(); ++i) {
    UniqueFd next(
        ::openat(at, components[i].c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!next) return -1;
    struct stat st {};
    if (::fstat(next.get(), &st) != 0) return -1;
    if (st.st_dev != root.st_dev) {
      errno = EXDEV;
      return -1;
    }
    current = std::move(next);
    at = current.get();
  }
  int fd = ::openat(at, components.back().c_str(), flags | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0) return -1;
  struct stat st {};
  if (::fstat(fd, &st) != 0 || st.st_dev != root.st_dev) {
    ::close(fd);
    errno = EXDEV;
    return -1;
  }
  return fd;
}

}  // namespace

Result<std::vector<std::string>> SplitRelativePath(std::string_view path) {
  if (path.empty()) return InvalidInput("empty path; name a file relative to the workspace");
  if (path.size() > kMaxPathBytes)
    return InvalidInput("path is " + std::to_string(path.size()) + " bytes; the limit is 4096");
  if (path[0] == '/') return InvalidInput("absolute path; use a path relative to the workspace");
  for (unsigned char c : path) {
    if (c < 0x20 || c == 0x7f) {
      return InvalidInput("control character " + EscapeForMessage(std::string(1, char(c))) +
                          " in the name; rename it");
    }
  }
  std::vector<std::string> components;
  size_t start = 0;
  while (true) {
    size_t slash = path.find('/', start);
    std::string_view part =
        path.substr(start, slash == std::string_view::npos ? slash : slash - start);
    if (part.empty())
      return InvalidInput("empty component (\"//\" or a trailing \"/\"); remove it");
    if (part == "." || part == "..")
      return InvalidInput("\"" + std::string(part) + "\" component; name the path without it");
    if (part.size() > kMaxNameBytes)
      return InvalidInput("a component is " + std::to_string(part.size()) +
                          " bytes; the limit is 255");
    components.emplace_back(part);
    if (components.size() > kMaxPathDepth)
      return InvalidInput("more than 64 components deep; flatten the tree");
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return components;
}

std::string EscapeForMessage(std::string_view name) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string escaped;
  for (unsigned char c : name) {
    if (c == '\n') {
      escaped += "\\n";
    } else if (c == '\\') {
      escaped += "\\\\";
    } else if (c < 0x20 || c == 0x7f) {
      escaped += {'\\', 'x', kHex[c >> 4], kHex[c & 15]};
    } else {
      escaped += static_cast<char>(c);
    }
  }
  return escaped;
}

std::string JoinPath(const std::vector<std::string>& components, size_t count) {
  std::string joined;
  for (size_t i = 0; i < count && i < components.size(); ++i) {
    if (i > 0) joined += '/';
    joined += components[i];
  }
  return joined;
}

void ForceOpenBeneathFallbackForTesting(bool force) { force_fallback = force; }

Result<UniqueFd> OpenBeneath(int dir_fd, std::string_view path, int flags, mode_t mode) {
  auto components = SplitRelativePath(path);
  if (!components) return components.error().Context(std::string(path));
  const std::string text(path);
  if (!force_fallback) {
    struct open_how how {};
    how.flags = static_cast<uint64_t>(flags | O_NOFOLLOW | O_CLOEXEC);
    // O_TMPFILE includes O_DIRECTORY's bit; openat2 refuses a mode without a file to create.
    const bool creates = (flags & O_CREAT) != 0 || (flags & O_TMPFILE) == O_TMPFILE;
    how.mode = creates ? mode : 0;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV;
    // EAGAIN: a concurrent rename or mount made the kernel give up on a RESOLVE_BENEATH walk.
    long fd = -1;
    for (int attempt = 0; attempt < 100; ++attempt) {
      fd = ::syscall(SYS_openat2, dir_fd, text.c_str(), &how, sizeof(how));
      if (fd >= 0 || (errno != EINTR && errno != EAGAIN)) break;
    }
    if (fd >= 0) return UniqueFd(static_cast<int>(fd));
    if (errno != ENOSYS) return SysError(ErrorCode::kIo, "openat2(" + text + ")");
  }
  int fd = OpenPerComponent(dir_fd, *components, flags, mode);
  if (fd < 0) return SysError(ErrorCode::kIo, "openat(" + text + ", O_NOFOLLOW)");
  return UniqueFd(fd);
}

Result<ParentDir> OpenParentBeneath(int dir_fd, const std::vector<std::string>& components,
                                    bool create, const std::optional<FileOwner>& owner,
                                    std::vector<std::string>* created) {
  ParentDir parent;
  parent.fd.reset(::fcntl(dir_fd, F_DUPFD_CLOEXEC, 3));
  if (!parent.fd) return SysError(ErrorCode::kIo, "dup");
  for (size_t i = 0; i + 1 < components.size(); ++i) {
    const std::string& name = components[i];
    const std::string so_far = JoinPath(components, i + 1);
    bool made = false;
    if (create) {
      if (::mkdirat(parent.fd.get(), name.c_str(), 0700) == 0) {
        made = true;
      } else if (errno != EEXIST) {
        return SysError(ErrorCode::kIo, "mkdirat(" + so_far + ")");
      }
    }
    UniqueFd next(::openat(parent.fd.get(), name.c_str(),
                           (made ? O_RDONLY : O_PATH) | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!next) {
      return SysError(ErrorCode::kIo, "open directory " + so_far +
                                          " (a symlink or a file is in the way; remove it)");
    }
    if (made) {
      if (created != nullptr) created->push_back(so_far);
      if (::fchmod(next.get(), 0755) != 0)
        return SysError(ErrorCode::kIo, "fchmod(" + so_far + ")");
      if (owner && ::fchown(next.get(), owner->uid, owner->gid) != 0)
        return SysError(ErrorCode::kIo, "fchown(" + so_far + ")");
    }
    parent.fd = std::move(next);
  }
  parent.name = components.back();
  return parent;
}

namespace {

Result<bool> WalkDir(int dir_fd, const std::string& prefix, size_t depth, dev_t root_dev,
                     size_t* visits_left, const std::function<WalkAction(const WalkItem&)>& visit) {
  std::vector<std::string> names;
  bool budget_spent = false;
  {
    int list_fd = ::openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (list_fd < 0) return SysError(ErrorCode::kIo, "open directory " + prefix);
    DIR* dir = ::fdopendir(list_fd);
    if (dir == nullptr) {
      ::close(list_fd);
      return SysError(ErrorCode::kIo, "fdopendir " + prefix);
    }
    // A name is charged to the budget when it is read, not when it is visited: the lists held
    // by every level of the descent together never exceed the budget (charged on visit, each
    // level could hold a whole budget of names, and a deep tree of wide directories cost the
    // walker depth times that), and a directory of 10^6 entries costs no more.
    while (struct dirent* entry = ::readdir(dir)) {
      if (std::strcmp(entry->d_name, ".") == 0 || std::strcmp(entry->d_name, "..") == 0) continue;
      if (*visits_left == 0) {
        budget_spent = true;
        break;
      }
      --*visits_left;
      names.emplace_back(entry->d_name);
    }
    ::closedir(dir);
  }
  std::sort(names.begin(), names.end());
  for (const std::string& name : names) {
    struct stat st {};
    if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno == ENOENT) continue;
      return SysError(ErrorCode::kIo, "fstatat(" + prefix + name + ")");
    }
    const std::string path = prefix + name;
    const bool other_device = st.st_dev != root_dev;
    WalkAction action = visit(WalkItem{path, dir_fd, name, st, depth, other_device});
    if (action == WalkAction::kStop) return false;
    if (action == WalkAction::kSkip || !S_ISDIR(st.st_mode) || other_device) continue;
    UniqueFd child(::openat(dir_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!child) return SysError(ErrorCode::kIo, "open directory " + path);
    auto more = WalkDir(child.get(), path + "/", depth + 1, root_dev, visits_left, visit);
    if (!more || !*more) return more;
  }
  return !budget_spent;
}

}  // namespace

Result<bool> WalkTree(int dir_fd, const std::string& prefix, size_t max_visits,
                      const std::function<WalkAction(const WalkItem&)>& visit) {
  struct stat root {};
  if (::fstat(dir_fd, &root) != 0) return SysError(ErrorCode::kIo, "fstat " + prefix);
  size_t visits_left = max_visits;
  return WalkDir(dir_fd, prefix.empty() ? "" : prefix + "/", 1, root.st_dev, &visits_left, visit);
}

Result<void> CopyRange(int in_fd, uint64_t offset, uint64_t length, int out_fd) {
  char buffer[64 * 1024];
  while (length > 0) {
    size_t want = static_cast<size_t>(std::min<uint64_t>(length, sizeof(buffer)));
    ssize_t n = ::pread(in_fd, buffer, want, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return SysError(ErrorCode::kIo, "pread");
    if (n == 0) return MakeError(ErrorCode::kIo, "source is shorter than its recorded size");
    SBX_TRY(WriteAll(out_fd, std::string_view(buffer, static_cast<size_t>(n))));
    offset += static_cast<uint64_t>(n);
    length -= static_cast<uint64_t>(n);
  }
  return Ok{};
}

Result<void> CheckAncestorsGuarded(const std::string& what, const std::string& real_path,
                                   uid_t owner_uid, const std::string& owner_fix) {
  std::string ancestor = real_path;
  while (ancestor.size() > 1) {
    ancestor.resize(ancestor.rfind('/') == 0 ? 1 : ancestor.rfind('/'));
    struct stat st {};
    if (::lstat(ancestor.c_str(), &st) != 0) return SysError(ErrorCode::kIo, "lstat(" + ancestor + ")");
    if (st.st_uid != 0 && st.st_uid != owner_uid) {
      return InvalidInput(what + ": its parent directory " + ancestor + " is owned by uid " +
                          std::to_string(st.st_uid) + ", who could replace it; " + owner_fix);
    }
    const bool sticky = S_ISDIR(st.st_mode) && (st.st_mode & S_ISVTX);
    if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !sticky) {
      char mode[16];
      std::snprintf(mode, sizeof(mode), "%04o", static_cast<unsigned>(st.st_mode & 07777));
      return InvalidInput(what + ": its parent directory " + ancestor +
                          " is writable by group or other (mode " + mode + "); chmod go-w " + ancestor);
    }
  }
  return Ok{};
}

}  // namespace sbx
