// Unit tests for the audit log's hash (src/netd/log_digest.h).
#include "src/netd/log_digest.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

#include "sandbox/unique_fd.h"
#include "tests/unit/files_test_util.h"

namespace sbx::netd {
namespace {

TEST(LogSha256, HashesTheWholeFileWhateverItsOffset) {
  sbx::testing::TempDir dir;
  const std::string path = dir.path() + "/log.jsonl";
  UniqueFd fd(open(path.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
  ASSERT_TRUE(fd);
  EXPECT_EQ(LogSha256(fd.get()),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");  // empty
  ASSERT_EQ(write(fd.get(), "abc", 3), 3);
  EXPECT_EQ(LogSha256(fd.get()),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  // 200 KiB: more than one read.
  std::string big(200 * 1024, 'x');
  ASSERT_EQ(write(fd.get(), big.data(), big.size()), static_cast<ssize_t>(big.size()));
  EXPECT_EQ(LogSha256(fd.get()).size(), 64u);
}

TEST(LogSha256, IsEmptyForAnFdItCannotRead) {
  sbx::testing::TempDir dir;
  const std::string path = dir.path() + "/log.jsonl";
  UniqueFd fd(open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
  ASSERT_TRUE(fd);
  EXPECT_EQ(LogSha256(fd.get()), "");
  EXPECT_EQ(LogSha256(-1), "");
}

}  // namespace
}  // namespace sbx::netd
