// Snapshots of a workspace's regular files, walked fd-relative without following symlinks.
#include "src/executor/workspace_changes.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sandbox/unique_fd.h"

namespace sbx::executor {
namespace {

constexpr int kMaxDepth = 32;

void Walk(int dir_fd, const std::string& prefix, int depth, size_t max_entries, size_t& visited,
          WorkspaceSnapshot& out) {
  int fd = ::openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  DIR* dir = ::fdopendir(fd);
  if (dir == nullptr) {
    ::close(fd);
    return;
  }
  while (struct dirent* entry = ::readdir(dir)) {
    std::string name = entry->d_name;
    if (name == "." || name == "..") continue;
    if (++visited > max_entries) break;
    struct stat st;
    if (::fstatat(::dirfd(dir), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    std::string path = prefix.empty() ? name : prefix + "/" + name;
    if (S_ISREG(st.st_mode)) {
      out[path] = FileStamp{static_cast<uint64_t>(st.st_size),
                            static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec,
                            static_cast<uint64_t>(st.st_ino)};
    } else if (S_ISDIR(st.st_mode) && depth < kMaxDepth) {
      UniqueFd child(::openat(::dirfd(dir), name.c_str(),
                              O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (child) Walk(child.get(), path, depth + 1, max_entries, visited, out);
    }
  }
  ::closedir(dir);
}

}  // namespace

WorkspaceSnapshot SnapshotWorkspace(int workspace_fd, size_t max_entries) {
  WorkspaceSnapshot out;
  size_t visited = 0;
  UniqueFd root(::openat(workspace_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (root) Walk(root.get(), "", 0, max_entries, visited, out);
  return out;
}

std::vector<std::string> ChangedFiles(const WorkspaceSnapshot& before, const WorkspaceSnapshot& after) {
  std::vector<std::string> changed;
  for (const auto& [path, stamp] : after) {
    auto it = before.find(path);
    if (it == before.end() || !(it->second == stamp)) changed.push_back(path);
  }
  return changed;
}

}  // namespace sbx::executor
