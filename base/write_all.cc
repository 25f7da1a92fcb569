// Writing a whole buffer to a descriptor.
#include "base/write_all.h"

#include <unistd.h>

#include <cerrno>

namespace sbx {

Result<void> WriteAll(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return SysError(ErrorCode::kIo, "write");
    if (n == 0) return SysError(ErrorCode::kIo, "write", EIO);
    data.remove_prefix(static_cast<size_t>(n));
  }
  return Ok{};
}

}  // namespace sbx
