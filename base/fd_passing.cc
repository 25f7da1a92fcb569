// One SCM_RIGHTS message, built on the stack (the sandbox child must not allocate).
#include "base/fd_passing.h"

#include <sys/socket.h>

#include <cerrno>
#include <cstring>

namespace sbx {

ssize_t SendWithFds(int sock, const void* data, size_t size, const int* fds, size_t count) {
  if (count > kMaxFdsPerMessage) {
    errno = EINVAL;
    return -1;
  }
  alignas(cmsghdr) char control[CMSG_SPACE(kMaxFdsPerMessage * sizeof(int))];
  iovec iov{const_cast<void*>(data), size};
  msghdr message{};
  message.msg_iov = &iov;
  message.msg_iovlen = 1;
  if (count > 0) {
    message.msg_control = control;
    message.msg_controllen = CMSG_SPACE(count * sizeof(int));
    cmsghdr* header = CMSG_FIRSTHDR(&message);
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(count * sizeof(int));
    std::memcpy(CMSG_DATA(header), fds, count * sizeof(int));
  }
  ssize_t sent;
  do {
    sent = ::sendmsg(sock, &message, MSG_NOSIGNAL);
  } while (sent < 0 && errno == EINTR);
  return sent;
}

}  // namespace sbx
