// Workspace archives: a workspace persisted as a small, normalized tar and restored from one.
//
// The archive is POSIX ustar, with a pax extended header ('x', key "path") for names over
// 100 bytes; written and read by the few dozen lines in workspace_archive.cc (no library).
// It holds only directories and regular files under normalized relative paths, with modes
// 0755 (directories and files with an execute bit) or 0644, uid/gid 0, no user or group
// names and mtime 0, so the same tree always gives the same bytes. Symlinks, FIFOs,
// sockets, devices, mount points, names a manifest would refuse and trees deeper than
// max_depth are left out and listed in ArchiveReport::skipped; setuid, setgid and sticky
// bits never enter an archive.
//
// Usage:
//   1. After every process of the sandbox is dead: PersistWorkspaceTar(workspace, "/x.tar").
//      It walks fd-relative without following symlinks, like copy-out. Exceeding a budget is
//      an Error (a silently incomplete archive would lose work) and the archive file is removed.
//   2. RestoreWorkspaceTar("/x.tar", workspace, owner) reads every header first and turns the
//      archive into a Manifest of directories and file ranges, so every entry passes exactly
//      the manifest's rules (ValidateManifest) before one byte is extracted; then it stages
//      it (StageManifest: fd-relative, O_EXCL, undone on failure). Links, devices, FIFOs,
//      global pax headers, GNU extensions and base-256 numbers are refused with the entry's
//      index. The archive must be a regular file (it is read twice, with pread).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/error.h"
#include "sandbox/fs/fs_beneath.h"
#include "sandbox/workspace/copy_out.h"
#include "sandbox/workspace/manifest.h"

namespace sbx {

struct ArchiveBudgets {
  uint64_t max_bytes = 1ull << 30;  // file contents
  size_t max_entries = 100'000;     // files and directories
  size_t max_depth = 64;            // components of a relative path (64 at most)
};

struct ArchiveReport {
  size_t files = 0;
  size_t directories = 0;
  uint64_t bytes = 0;                // file contents
  std::vector<std::string> skipped;  // "run.sock (not a regular file)", the first kMaxListedSkips
  size_t skipped_unlisted = 0;       // skipped beyond those listed
};

// Writes the workspace as a tar stream to `out_fd` (a file, pipe or socket).
Result<ArchiveReport> PersistWorkspaceTar(const std::string& workspace_dir, int out_fd,
                                          const ArchiveBudgets& budgets = {});
// Writes it to a new file at `archive_path` (O_CREAT | O_EXCL | O_NOFOLLOW, 0600).
Result<ArchiveReport> PersistWorkspaceTar(const std::string& workspace_dir,
                                          const std::string& archive_path,
                                          const ArchiveBudgets& budgets = {});

// Extracts into the existing directory `workspace_dir`; files owned by `owner`.
Result<StageReport> RestoreWorkspaceTar(int archive_fd, const std::string& workspace_dir,
                                        const FileOwner& owner, const ArchiveBudgets& budgets = {});
Result<StageReport> RestoreWorkspaceTar(const std::string& archive_path,
                                        const std::string& workspace_dir, const FileOwner& owner,
                                        const ArchiveBudgets& budgets = {});

}  // namespace sbx
