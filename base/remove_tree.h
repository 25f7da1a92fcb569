// Removing a directory tree without following symlinks: a sandbox's workspace, an image.
#pragma once

#include <string>

#include "base/error.h"

namespace sbx {

// Removes a directory tree without following symlinks (fd-relative, never leaves `dir`).
Result<void> RemoveTree(const std::string& path);

}  // namespace sbx
