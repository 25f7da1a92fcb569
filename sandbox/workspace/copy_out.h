// Copy-out: declared outputs brought from a workspace to a host directory, regular files only.
//
// Call only after every process of the sandbox is dead (security invariant 8): nothing may
// change the workspace while it is walked. Usage:
//   1. CopyOut(workspace, {"result.json", "output/*.png", "reports"}, host_dir) validates every
//      request first; one hostile request ("/etc/passwd", "../x", "a/../../x", a newline) is an
//      Error and nothing is copied.
//   2. Each request is opened beneath the workspace with openat2(RESOLVE_BENEATH |
//      RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV) (O_NOFOLLOW per component
//      where openat2 is missing); a directory is copied as a tree, fd-relative, never following
//      a symlink or crossing a mount. Only the last component may be a pattern (`*`, `?`, `[`,
//      fnmatch with FNM_PERIOD: dot files are not matched), capped at max_glob_matches.
//   3. The result lists every file met: copied, or why not. Symlinks, FIFOs, sockets and
//      devices are never opened for reading. A file whose st_size exceeds the bytes left is
//      over budget and is not read at all (a 1 TiB sparse file costs one fstatat).
//
// Destinations: the same relative path under `host_dest_dir` (which must exist). Missing
// directories are created 0755 beneath it without following symlinks (a symlink planted in
// the destination tree makes that file a destination_error). Each file is written to a fresh
// O_CREAT | O_EXCL | O_NOFOLLOW temporary name in its directory and renamed over the final
// name, so an existing destination file or symlink is replaced, never written through (unless
// its path is one of budgets.reserved: then it is left as it is). Modes
// are 0644, or 0755 when the source had an execute bit; no owner, xattrs or times are copied.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/error.h"

namespace sbx {

struct CopyOutBudgets {
  uint64_t max_bytes = 1ull << 30;  // file contents copied, in total
  size_t max_files = 10'000;        // files copied; the walk stops at the limit
  size_t max_depth = 64;            // components of a relative path (64 at most)
  size_t max_glob_matches = 1'000;  // per pattern
  size_t max_visits = 100'000;      // directory entries examined, in total
  // Destination paths (fnmatch patterns, relative to host_dest_dir, `/` matched only by `/`)
  // that are never replaced: the caller's own records when outputs land beside them (the
  // agent's transcript.jsonl and network-*.jsonl). A file copied there is a destination_error.
  std::vector<std::string> reserved;
};

enum class CopyStatus {
  kCopied,
  kSkippedSymlink,    // a symlink (or a symlink in the requested path)
  kSkippedSpecial,    // FIFO, socket, device, or a mount point
  kSkippedBadName,    // a name a manifest would refuse (newline, control characters)
  kOverBudget,        // bytes, file count, glob matches or visits exhausted
  kTooDeep,           // deeper than max_depth
  kNotFound,          // the request matched nothing
  kDestinationError,  // the host side refused (a planted symlink, a directory in the way)
};

// "copied", "skipped_symlink", "skipped_special", "skipped_bad_name", "over_budget",
// "too_deep", "not_found", "destination_error".
const char* CopyStatusName(CopyStatus status);

struct CopiedEntry {
  std::string path;   // relative to the workspace (for a pattern with no match: the pattern)
  uint64_t size = 0;  // st_size, also for entries not copied
  CopyStatus status = CopyStatus::kCopied;
  std::string detail;  // why, for anything but kCopied
};

// Entries not copied that a result lists by name; the rest are only counted. The code decides
// how many a workspace holds (100,000 visits of 16 KB paths would be 1.6 GB of names).
inline constexpr size_t kMaxListedSkips = 1000;

struct CopyOutResult {
  // Every copied entry (bounded by max_files), and the first kMaxListedSkips of the others.
  std::vector<CopiedEntry> entries;
  size_t unlisted = 0;  // entries not copied beyond those listed
  uint64_t bytes = 0;
  size_t files = 0;
  bool truncated = false;  // a count or visit budget ended the walk early
};

Result<CopyOutResult> CopyOut(const std::string& workspace_dir,
                              const std::vector<std::string>& requests,
                              const std::string& host_dest_dir, const CopyOutBudgets& budgets = {});

// The same with directory fds already open (O_PATH is enough for both).
Result<CopyOutResult> CopyOutAt(int workspace_fd, const std::vector<std::string>& requests,
                                int dest_fd, const CopyOutBudgets& budgets = {});

}  // namespace sbx
