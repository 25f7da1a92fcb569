// Passing file descriptors over a Unix socket: one message of bytes with fds attached
// (SCM_RIGHTS). Used by the sandbox child (capture sockets to the runner), the runner (to
// sbx-netd) and the pool (to the zygote).
#pragma once

#include <sys/types.h>

#include <cstddef>

namespace sbx {

// The kernel's SCM_MAX_FD: no message carries more.
inline constexpr size_t kMaxFdsPerMessage = 253;

// Sends `size` bytes of `data` with `fds[0..count)` attached, in one sendmsg (MSG_NOSIGNAL),
// retrying EINTR. Returns what sendmsg returns: the bytes sent (on a stream socket possibly
// fewer), or -1 with errno set (EINVAL for more than kMaxFdsPerMessage fds); a nonblocking
// socket's EAGAIN is the caller's to wait out. The fds stay the caller's.
// Async-signal-safe: it does not allocate (the sandbox child calls it).
ssize_t SendWithFds(int sock, const void* data, size_t size, const int* fds, size_t count);

}  // namespace sbx
