// The workspace: validating a given directory, making a fresh temporary one, removing it.
#pragma once

#include <sys/types.h>

#include <string>

#include "base/error.h"
#include "base/unique_fd.h"

namespace sbx {

struct Workspace {
  std::string path;  // canonical host path
  UniqueFd fd;       // O_PATH|O_DIRECTORY on exactly that directory; mounts use the fd
  UniqueFd lock;     // an exclusive flock held for the run (given and temporary workspaces)
  bool temporary = false;
};

// Opens an existing workspace. Rejects relative paths, missing paths, non-directories,
// symlinks anywhere in the path, "/", system trees (/proc, /sys, /dev, /etc, /usr, /boot,
// /run, /var/run, /home itself, /root itself), anything overlapping sbx's state or image
// cache, and a workspace another sbx run holds (flock).
Result<Workspace> OpenWorkspace(const std::string& path);

// Makes a fresh 0700 directory under sbx's private state directory (/var/tmp/sbx as root,
// /tmp/sbx-<uid> otherwise, both verified to be ours and 0700), owned by `owner_uid/gid`
// (the sandbox user's host ids). Stale workspaces of dead runners are removed first.
Result<Workspace> CreateTemporaryWorkspace(uid_t owner_uid, gid_t owner_gid);

// Removes the entries <prefix><pid>-XXXXXX of `base` whose runner (pid) is gone, unless one is
// locked (flock) or changed in the last minute (a runner in another pid namespace). Shared by
// the temporary workspaces ("ws-") and the outer runs' private areas ("sbx-outer-").
void RemoveStaleRunDirectories(const std::string& base, const std::string& prefix);

// A fresh 0700 <base>/<prefix><pid>-XXXXXX, made after RemoveStaleRunDirectories(base, prefix),
// locked with an exclusive flock (`lock`, held for the run, so other runners' sweeps leave it
// alone) and owned by `owner` when that is not the caller itself. Removed if a step fails.
struct LockedRunDirectory {
  std::string path;
  UniqueFd lock;
};
Result<LockedRunDirectory> CreateLockedRunDirectory(const std::string& base, const std::string& prefix,
                                                    uid_t owner_uid, gid_t owner_gid);

// `path` as given if it is absolute and already canonical (no symlink, no "." or ".." in it);
// otherwise an error that starts with `field`. `missing_hint` is appended when it does not
// exist. Shared by the workspace and image checks.
Result<std::string> RequireCanonicalPath(const std::string& field, const std::string& path,
                                         const std::string& missing_hint = "");

// sbx's private state directory for this uid, created 0700 if missing.
Result<std::string> StateDirectory();

}  // namespace sbx
