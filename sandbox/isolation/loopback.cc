// Brings the loopback interface of a fresh network namespace up with one ioctl.
#include "sandbox/isolation/loopback.h"

#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace sbx {

int BringUpLoopbackInChild() {
  int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return errno;
  struct ifreq request {};
  std::strncpy(request.ifr_name, "lo", IFNAMSIZ - 1);
  int err = 0;
  if (::ioctl(fd, SIOCGIFFLAGS, &request) != 0) {
    err = errno;
  } else {
    request.ifr_flags |= IFF_UP | IFF_RUNNING;
    if (::ioctl(fd, SIOCSIFFLAGS, &request) != 0) err = errno;
  }
  ::close(fd);
  return err;
}

}  // namespace sbx
