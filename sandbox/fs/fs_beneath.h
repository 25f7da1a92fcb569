// Relative-path rules and fd-relative file operations that never leave a directory or follow
// a symlink: the shared ground of manifest staging, copy-out and workspace archives.
//
// Every path these functions take is relative to a directory fd and has passed
// SplitRelativePath. Nothing here resolves a path string from "/" inside a directory the
// sandbox could write; the kernel resolves each name relative to an fd we hold.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "base/unique_fd.h"

namespace sbx {

inline constexpr size_t kMaxNameBytes = 255;   // NAME_MAX
inline constexpr size_t kMaxPathBytes = 4096;  // PATH_MAX
inline constexpr size_t kMaxPathDepth = 64;

// Splits a path relative to a workspace into its components, or says why it is refused:
// empty, absolute, "." or ".." components, empty components ("a//b", "a/"), any byte below
// 0x20 or 0x7f (NUL, newline, ESC), a component over 255 bytes, the whole path over 4096
// bytes, or more than 64 components. The message is meant to be prefixed by the caller.
Result<std::vector<std::string>> SplitRelativePath(std::string_view path);

// `name` made safe to print in a message: control bytes become \n or \xNN, a backslash \\, so a
// hostile name cannot forge log lines or terminal escapes.
std::string EscapeForMessage(std::string_view name);

// Joins components with "/".
std::string JoinPath(const std::vector<std::string>& components, size_t count);

// Opens a validated relative `path` beneath `dir_fd` with flags | O_CLOEXEC | O_NOFOLLOW.
// Uses openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS |
// RESOLVE_NO_XDEV); where the kernel has no openat2 (ENOSYS) it walks component by component
// with O_NOFOLLOW and refuses a component on another device (EXDEV). A symlink in any
// component fails (ELOOP, or ENOTDIR from the fallback); the error names the path.
Result<UniqueFd> OpenBeneath(int dir_fd, std::string_view path, int flags, mode_t mode = 0);

// Test hook: makes OpenBeneath take the per-component fallback, as if openat2 were ENOSYS.
void ForceOpenBeneathFallbackForTesting(bool force);

// Whether only root or `owner_uid` can replace what the canonical path `real_path` names:
// each of its ancestor directories is owned by one of them and is not writable by group or
// other (a sticky directory such as /tmp excepted). The error starts with `what` and names
// the ancestor and the fix (`owner_fix` when the owner is wrong).
Result<void> CheckAncestorsGuarded(const std::string& what, const std::string& real_path,
                                   uid_t owner_uid, const std::string& owner_fix);

struct FileOwner {
  uid_t uid = 0;
  gid_t gid = 0;
};

// The directory holding the last component of `components`, opened beneath `dir_fd`.
// With `create`, missing directories are made 0755 (owned by `owner` when given) and their
// relative paths appended to `created` in creation order, so a caller can undo them.
// An existing non-directory or symlink in the way is an error.
struct ParentDir {
  UniqueFd fd;       // O_PATH | O_DIRECTORY
  std::string name;  // the last component
};
Result<ParentDir> OpenParentBeneath(int dir_fd, const std::vector<std::string>& components,
                                    bool create, const std::optional<FileOwner>& owner,
                                    std::vector<std::string>* created);

// One entry met by WalkTree. `path` is relative to the walk's root (prefix + names).
struct WalkItem {
  const std::string& path;
  int parent_fd;
  const std::string& name;
  const struct stat& st;  // lstat: a symlink is reported as a symlink
  size_t depth;           // 1 for the root's own entries
  bool other_device;      // a mount point; WalkTree never descends into it
};
enum class WalkAction { kContinue, kSkip, kStop };  // kSkip: do not descend into this dir

// Walks the directory `dir_fd` depth-first in name order without following symlinks or
// crossing mounts, calling `visit` for every entry (directories before their contents).
// Returns false when `visit` said kStop or `max_visits` entries were seen; true otherwise.
Result<bool> WalkTree(int dir_fd, const std::string& prefix, size_t max_visits,
                      const std::function<WalkAction(const WalkItem&)>& visit);

// Copies exactly `length` bytes of `in_fd` from `offset` (pread) to `out_fd`; a shorter
// source is an error. Retries on EINTR.
Result<void> CopyRange(int in_fd, uint64_t offset, uint64_t length, int out_fd);

// Mode a copied regular file gets: 0755 if the source had any execute bit, else 0644.
inline mode_t NormalizedFileMode(mode_t source_mode) { return (source_mode & 0111) ? 0755 : 0644; }

}  // namespace sbx
