// CloseAllFdsExcept: what an init and a pooled session keep of the descriptors they inherit.
#include "sandbox/isolation/close_fds.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <utility>

#include <gtest/gtest.h>

namespace sbx {
namespace {

// In a child: opens fds 3.. up to `opened`, keeps {0, 1, 2, report, kept}, and writes on `report`
// which of fds 0..63 are still open, one character each.
std::string OpenAfterClosingInChild(int opened_count) {
  int report[2];
  EXPECT_EQ(::pipe(report), 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    int last = -1;
    for (int i = 0; i < opened_count; ++i) last = ::open("/dev/null", O_RDONLY);
    const int kept = last - 1;  // one in the middle of the opened run
    int keep[] = {0, 1, 2, report[1], kept};
    if (report[1] > kept) std::swap(keep[3], keep[4]);
    if (CloseAllFdsExcept(keep, 5) != 0) ::_exit(2);
    char open_fds[64];
    for (int fd = 0; fd < 64; ++fd) open_fds[fd] = ::fcntl(fd, F_GETFD) == -1 ? '.' : (fd == kept ? 'k' : 'o');
    ::_exit(::write(report[1], open_fds, sizeof(open_fds)) == sizeof(open_fds) ? 0 : 3);
  }
  ::close(report[1]);
  std::string seen(64, ' ');
  EXPECT_EQ(::read(report[0], seen.data(), seen.size()), 64);
  ::close(report[0]);
  int status = 0;
  EXPECT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  return seen;
}

TEST(CloseFds, OnlyTheKeptDescriptorsStayOpen) {
  const std::string seen = OpenAfterClosingInChild(12);
  // 0-2, the report pipe and the kept one: five open, every other one closed.
  EXPECT_EQ(seen.substr(0, 3), "ooo") << seen;
  EXPECT_EQ(std::count(seen.begin(), seen.end(), 'k'), 1) << seen;
  EXPECT_EQ(std::count(seen.begin(), seen.end(), 'o'), 4) << seen;
}

TEST(CloseFds, KeptDescriptorsOutOfOrderAreRefusedBeforeAnyIsClosed) {
  // In a child: a list that closed as it went would have closed 0-4 before it saw the 3.
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int keep[] = {5, 3};
    const int err = CloseAllFdsExcept(keep, 2);
    ::_exit(err == EINVAL && ::fcntl(0, F_GETFD) != -1 && ::fcntl(2, F_GETFD) != -1 ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

}  // namespace
}  // namespace sbx
