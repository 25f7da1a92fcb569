// Removing a directory tree without following symlinks, whatever its depth or modes.
#include "base/remove_tree.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace sbx {
namespace {

// Opens the directory `name` under `parent`, making it 0700 first when its mode (set by the
// program, say 000) would keep even its owner out.
int OpenDirForRemoval(int parent, const char* name) {
  int fd = ::openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0 && errno == EACCES && ::fchmodat(parent, name, 0700, 0) == 0)
    fd = ::openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  return fd;
}

enum class Scan { kEmpty, kDescended, kStuck };

// A directory entered on the way down: its name, and the identity of the directory it was
// entered from, which its ".." must still be on the way back up.
struct Level {
  std::string name;
  dev_t parent_dev = 0;
  ino_t parent_ino = 0;
};

// One pass over `*dir`: unlinks what is not a directory; enters the first subdirectory
// (replacing *dir, pushing it). Symlinks are unlinked, never followed.
Scan ScanAndRemove(int* dir, std::vector<Level>& levels, int* last_errno) {
  DIR* stream = ::fdopendir(::dup(*dir));
  if (stream == nullptr) {
    *last_errno = errno;
    return Scan::kStuck;
  }
  ::rewinddir(stream);
  bool progress = false, left_behind = false;
  std::string subdir;
  while (struct dirent* entry = ::readdir(stream)) {
    if (std::strcmp(entry->d_name, ".") == 0 || std::strcmp(entry->d_name, "..") == 0) continue;
    if (::unlinkat(*dir, entry->d_name, 0) == 0) {
      progress = true;
    } else if (errno == EISDIR || errno == EPERM) {
      subdir = entry->d_name;
      break;
    } else if (errno != ENOENT) {
      *last_errno = errno;
      left_behind = true;
    }
  }
  ::closedir(stream);
  if (!subdir.empty()) {
    struct stat here {};
    if (::fstat(*dir, &here) != 0) {
      *last_errno = errno;
      return Scan::kStuck;
    }
    int child = OpenDirForRemoval(*dir, subdir.c_str());
    if (child < 0) {
      *last_errno = errno;
      return Scan::kStuck;
    }
    ::close(*dir);
    *dir = child;
    levels.push_back({subdir, here.st_dev, here.st_ino});
    return Scan::kDescended;
  }
  if (left_behind) return progress ? Scan::kDescended : Scan::kStuck;  // rescan, or give up
  return Scan::kEmpty;
}

// Depth-first removal holding one directory fd at a time and no recursion, so a tree of any
// depth (a program can make one 100,000 levels deep) is removed within the fd limit.
Result<void> RemoveTreeAt(int parent_fd, const char* name) {
  if (::unlinkat(parent_fd, name, 0) == 0 || errno == ENOENT) return Ok{};
  if (errno != EISDIR && errno != EPERM) return SysError(ErrorCode::kIo, std::string("unlink ") + name);
  int dir = OpenDirForRemoval(parent_fd, name);
  if (dir < 0) return SysError(ErrorCode::kIo, std::string("open ") + name);
  std::vector<Level> levels = {{name}};
  int last_errno = 0;
  for (;;) {
    Scan scan = ScanAndRemove(&dir, levels, &last_errno);
    if (scan == Scan::kDescended) continue;
    if (scan == Scan::kStuck) {
      ::close(dir);
      return SysError(ErrorCode::kIo, "remove " + levels.back().name, last_errno);
    }
    if (levels.size() == 1) {
      ::close(dir);
      if (::unlinkat(parent_fd, name, AT_REMOVEDIR) != 0 && errno != ENOENT)
        return SysError(ErrorCode::kIo, std::string("rmdir ") + name);
      return Ok{};
    }
    // ".." is the directory this one was entered from unless something still running moved
    // it (rename of an ancestor): then ".." may lie above the tree, even above the root of the
    // removal, and everything there would be emptied. Checked, never assumed.
    int up = ::openat(dir, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    ::close(dir);
    if (up < 0) return SysError(ErrorCode::kIo, "open ..");
    struct stat parent {};
    if (::fstat(up, &parent) != 0 || parent.st_dev != levels.back().parent_dev ||
        parent.st_ino != levels.back().parent_ino) {
      ::close(up);
      return MakeError(ErrorCode::kIo, "remove " + std::string(name) + ": directory " + levels.back().name +
                                           " was moved during the removal (is something still writing "
                                           "there?); stopped without going further up");
    }
    if (::unlinkat(up, levels.back().name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) {
      int err = errno;
      ::close(up);
      return SysError(ErrorCode::kIo, "rmdir " + levels.back().name, err);
    }
    levels.pop_back();
    dir = up;
  }
}

}  // namespace

Result<void> RemoveTree(const std::string& path) {
  auto slash = path.find_last_of('/');
  std::string parent = slash == 0 ? "/" : path.substr(0, slash);
  std::string name = path.substr(slash + 1);
  int parent_fd = ::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (parent_fd < 0) return SysError(ErrorCode::kIo, "open(" + parent + ")");
  auto result = RemoveTreeAt(parent_fd, name.c_str());
  ::close(parent_fd);
  if (!result) return result.error().Context("remove " + path);
  return Ok{};
}

}  // namespace sbx
