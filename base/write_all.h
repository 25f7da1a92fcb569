// Writing a whole buffer to a descriptor: files, pipes, sockets, memfds.
#pragma once

#include <string_view>

#include "base/error.h"

namespace sbx {

// Writes all of `data`, resuming after short writes and EINTR. A write that makes no progress
// is an error (EIO), not a spin; EPIPE comes back as an error too (the callers that write to a
// reader that may leave run with SIGPIPE ignored).
Result<void> WriteAll(int fd, std::string_view data);

}  // namespace sbx
