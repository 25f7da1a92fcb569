// Snapshots of a workspace's regular files, walked fd-relative without following symlinks.
#include "src/executor/workspace_changes.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/unique_fd.h"
#include "sandbox/fs/fs_beneath.h"

namespace sbx::executor {

WorkspaceSnapshot SnapshotWorkspace(int workspace_fd, size_t max_entries) {
  constexpr size_t kMaxDepth = 32;
  WorkspaceSnapshot out;
  UniqueFd root(::openat(workspace_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!root) return out;
  (void)WalkTree(root.get(), "", max_entries, [&](const WalkItem& item) {
    if (S_ISREG(item.st.st_mode)) {
      out[item.path] = FileStamp{static_cast<uint64_t>(item.st.st_size),
                                 static_cast<int64_t>(item.st.st_mtim.tv_sec) * 1000000000 +
                                     item.st.st_mtim.tv_nsec,
                                 static_cast<uint64_t>(item.st.st_ino)};
    }
    return S_ISDIR(item.st.st_mode) && item.depth >= kMaxDepth ? WalkAction::kSkip : WalkAction::kContinue;
  });
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
