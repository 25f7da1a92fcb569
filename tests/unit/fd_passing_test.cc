// SendWithFds over a real socketpair: the bytes and the fds arrive; too many fds are refused
// before anything is sent.
#include "base/fd_passing.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "base/unique_fd.h"

namespace sbx {
namespace {

TEST(FdPassing, BytesAndFdsArriveTogether) {
  int pair[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair), 0);
  UniqueFd sender(pair[0]), receiver(pair[1]);
  UniqueFd file(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(file);
  const int fds[2] = {file.get(), receiver.get()};
  ASSERT_EQ(SendWithFds(sender.get(), "hello", 5, fds, 2), 5);

  char data[16];
  alignas(cmsghdr) char control[CMSG_SPACE(2 * sizeof(int))];
  iovec iov{data, sizeof data};
  msghdr message{};
  message.msg_iov = &iov;
  message.msg_iovlen = 1;
  message.msg_control = control;
  message.msg_controllen = sizeof control;
  ASSERT_EQ(::recvmsg(receiver.get(), &message, MSG_CMSG_CLOEXEC), 5);
  EXPECT_EQ(std::string(data, 5), "hello");
  cmsghdr* header = CMSG_FIRSTHDR(&message);
  ASSERT_NE(header, nullptr);
  ASSERT_EQ(header->cmsg_type, SCM_RIGHTS);
  ASSERT_EQ(header->cmsg_len, CMSG_LEN(2 * sizeof(int)));
  int got[2];
  std::memcpy(got, CMSG_DATA(header), sizeof got);
  UniqueFd first(got[0]), second(got[1]);
  struct stat a, b;
  ASSERT_EQ(::fstat(first.get(), &a), 0);
  ASSERT_EQ(::fstat(file.get(), &b), 0);
  EXPECT_EQ(a.st_ino, b.st_ino);  // the very file sent, as a new descriptor
  EXPECT_NE(first.get(), file.get());
  EXPECT_TRUE(S_ISSOCK((::fstat(second.get(), &a), a.st_mode)));
}

TEST(FdPassing, MoreFdsThanTheKernelTakesAreRefusedAndNothingIsSent) {
  int pair[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair), 0);
  UniqueFd sender(pair[0]), receiver(pair[1]);
  std::vector<int> fds(kMaxFdsPerMessage + 1, sender.get());
  errno = 0;
  EXPECT_EQ(SendWithFds(sender.get(), "x", 1, fds.data(), fds.size()), -1);
  EXPECT_EQ(errno, EINVAL);
  char byte;
  EXPECT_EQ(::recv(receiver.get(), &byte, 1, MSG_DONTWAIT), -1);
  EXPECT_EQ(errno, EAGAIN);
  // The control: the largest message the kernel takes goes through.
  fds.pop_back();
  EXPECT_EQ(SendWithFds(sender.get(), "x", 1, fds.data(), fds.size()), 1);
}

}  // namespace
}  // namespace sbx
