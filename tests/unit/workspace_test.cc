// Unit tests for workspace validation and symlink-safe, depth-proof tree removal.
#include "sandbox/workspace.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <string>

namespace sbx {
namespace {

std::string MakeTempDir() {
  std::string templ = "/var/tmp/sbx-unit-XXXXXX";
  EXPECT_NE(::mkdtemp(templ.data()), nullptr);
  return templ;
}

TEST(RemoveTree, NeverFollowsSymlinksOut) {
  std::string outside = MakeTempDir();
  std::string tree = MakeTempDir();
  ASSERT_EQ(::close(::open((outside + "/keep").c_str(), O_CREAT | O_WRONLY, 0644)), 0);
  ASSERT_EQ(::symlink(outside.c_str(), (tree + "/link").c_str()), 0);
  ASSERT_EQ(::mkdir((tree + "/d").c_str(), 0755), 0);
  ASSERT_EQ(::symlink((outside + "/keep").c_str(), (tree + "/d/file-link").c_str()), 0);
  ASSERT_TRUE(RemoveTree(tree));
  EXPECT_NE(::access(tree.c_str(), F_OK), 0);
  EXPECT_EQ(::access((outside + "/keep").c_str(), F_OK), 0);
  ASSERT_TRUE(RemoveTree(outside));
}

TEST(RemoveTree, RemovesDeepTreesAndLockedDirectories) {
  std::string tree = MakeTempDir();
  int fd = ::open(tree.c_str(), O_RDONLY | O_DIRECTORY);
  // 6000 levels: deeper than PATH_MAX allows by name, more than an fd per level would allow.
  for (int i = 0; i < 6000; ++i) {
    ASSERT_EQ(::mkdirat(fd, "d", 0755), 0) << i;
    int next = ::openat(fd, "d", O_RDONLY | O_DIRECTORY);
    ::close(fd);
    fd = next;
  }
  ASSERT_EQ(::close(::openat(fd, "f", O_CREAT | O_WRONLY, 0644)), 0);
  ::close(fd);
  ASSERT_EQ(::mkdir((tree + "/locked").c_str(), 0000), 0);
  ASSERT_TRUE(RemoveTree(tree));
  EXPECT_NE(::access(tree.c_str(), F_OK), 0);
}

TEST(OpenWorkspace, RejectsHostilePaths) {
  for (const char* bad : {"relative", "", "/", "/proc", "/proc/self", "/etc", "/home", "/usr/lib",
                          "/nonexistent-dir-for-sbx"})
    EXPECT_FALSE(OpenWorkspace(bad)) << bad;
  std::string dir = MakeTempDir();
  std::string link = dir + "-link";
  ASSERT_EQ(::symlink(dir.c_str(), link.c_str()), 0);
  auto through_link = OpenWorkspace(link);
  ASSERT_FALSE(through_link);
  EXPECT_NE(through_link.error().message.find("symlink"), std::string::npos);
  EXPECT_TRUE(OpenWorkspace(dir));
  ::unlink(link.c_str());
  ASSERT_TRUE(RemoveTree(dir));
}

}  // namespace
}  // namespace sbx
