// Files of a live session's workspace, seen from the host: one file read or written, the
// whole workspace as a tar and back. Every path is resolved beneath the workspace's fd without
// following a symlink, because the sandbox's code can change the tree at any moment.
#pragma once

#include <cstdint>
#include <string>

#include "base/error.h"
#include "sandbox/fs/fs_beneath.h"
#include "sandbox/policy/policy.h"

namespace sbx::server {

// What a path refers to when it cannot be served: the client's mistake or a missing file.
enum class FileProblem { kNone, kInvalidPath, kNotFound, kTooLarge, kConflict, kOther };

struct FileOutcome {
  FileProblem problem = FileProblem::kNone;
  std::string message;
};

FileOutcome ReadWorkspaceFile(int workspace_fd, const std::string& path, uint64_t max_bytes,
                              std::string& bytes);
// Creates missing parent directories and creates or replaces a regular file (never a symlink).
FileOutcome WriteWorkspaceFile(int workspace_fd, const std::string& path, const std::string& bytes,
                               const FileOwner& owner);
// Removes a file or symlink (never what a symlink points to); a directory is a conflict.
FileOutcome RemoveWorkspaceFile(int workspace_fd, const std::string& path);
// The workspace as a ustar archive (workspace_archive.h): regular files and directories only.
FileOutcome PersistWorkspace(const std::string& workspace_dir, std::string& tar);
// Extracts an archive of that form; every member is checked before anything is written.
FileOutcome HydrateWorkspace(const std::string& tar, const std::string& workspace_dir,
                             const FileOwner& owner);
// The owner that files written for the sandbox get: its user mapped to the host, or under
// isolation "outer" (no user namespace) uid and gid 1000 themselves.
Result<FileOwner> SandboxFileOwner(Isolation isolation);

}  // namespace sbx::server
