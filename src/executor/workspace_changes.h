// What an execution changed in the workspace: a snapshot of regular files before and after.
//
// The walk is sbx::WalkTree's (copy-out's): fd-relative, never following a symlink or crossing
// a mount, so a tree the sandboxed code is still changing can only make the list incomplete,
// never lead the walk out of the workspace. It is bounded: `max_entries` entries, depth 32.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace sbx::executor {

struct FileStamp {
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  uint64_t inode = 0;
  bool operator==(const FileStamp&) const = default;
};

using WorkspaceSnapshot = std::map<std::string, FileStamp>;  // relative path -> stamp

WorkspaceSnapshot SnapshotWorkspace(int workspace_fd, size_t max_entries = 20'000);

// Paths that are new in `after` or whose stamp differs, sorted.
std::vector<std::string> ChangedFiles(const WorkspaceSnapshot& before, const WorkspaceSnapshot& after);

}  // namespace sbx::executor
