// Reading a small file whole: cgroupfs values, CA files, secrets.
#pragma once

#include <cstddef>
#include <string>

#include "base/error.h"

namespace sbx {

// At most `max_bytes` of the file (more is cut off, not an error: callers that must know
// ask for one byte more than they accept).
Result<std::string> ReadSmallFile(const std::string& path, size_t max_bytes = 1 << 20);

}  // namespace sbx
