// The start-up check of an image directory before it becomes the overlay's lower layer.
#pragma once

#include <string>

#include "base/error.h"
#include "base/unique_fd.h"

namespace sbx {

// Opens `dir` as O_PATH after checking: an absolute path with no symlink in it, a directory
// owned by root (or by the caller when not root), not writable by group or others, holding the
// mount points the sandbox needs (workspace, proc, dev, tmp). The full walk (setuid files,
// device nodes) is `sbx image verify`; this is the cheap check every run pays.
struct OpenImage {
  std::string path;  // canonical
  UniqueFd fd;
};
Result<OpenImage> OpenVerifiedImage(const std::string& dir);

}  // namespace sbx
