// Unit tests for workspace validation and symlink-safe, depth-proof tree removal.
#include "base/remove_tree.h"
#include "sandbox/workspace/workspace.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <ctime>
#include <string>
#include <thread>

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

// A process still running in a workspace (a pooled session stuck in uninterruptible sleep past
// its SIGKILL, say) renames a deep directory up while the removal is inside it. Trusting ".."
// on the way back up would climb out of the tree and empty the directories above it.
TEST(RemoveTree, ADirectoryMovedUpDuringTheRemovalNeverTakesItAboveTheTree) {
  // A removal that trusted ".." climbs at most as many levels as it went down (27 here): the
  // tree sits 32 levels below its scratch dir, so even that failure stays inside the scratch.
  const std::string scratch = MakeTempDir();
  std::string outer = scratch;
  for (int level = 0; level < 32; ++level) {
    outer += "/g";
    ASSERT_EQ(::mkdir(outer.c_str(), 0755), 0);
  }
  const std::string tree = outer + "/ws";
  ASSERT_EQ(::mkdir(tree.c_str(), 0755), 0);
  ASSERT_EQ(::close(::open((outer + "/victim").c_str(), O_CREAT | O_WRONLY, 0644)), 0);
  int moved_races = 0;
  for (int attempt = 0; attempt < 40 && moved_races < 3; ++attempt) {
    std::string deep = tree;
    for (char c = 'a'; c <= 'y'; ++c) {
      deep += std::string("/") + c;
      ::mkdir(deep.c_str(), 0755);
    }
    const std::string z = deep + "/z";
    ASSERT_EQ(::mkdir(z.c_str(), 0755), 0);
    constexpr int kFiles = 3000;
    for (int i = 0; i < kFiles; ++i) {
      ASSERT_EQ(::close(::open((z + "/f" + std::to_string(i)).c_str(), O_CREAT | O_WRONLY, 0644)), 0);
    }
    // As soon as the removal has unlinked files in z, z moves to the top of the tree.
    std::atomic<bool> renamed{false};
    std::thread mover([&] {
      const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
      while (std::chrono::steady_clock::now() < until) {
        int gone = 0;
        for (int i = 0; i < kFiles; i += kFiles / 30) gone += ::access((z + "/f" + std::to_string(i)).c_str(), F_OK) != 0;
        if (gone > 0 && gone < 30) {
          renamed = ::rename(z.c_str(), (tree + "/zz").c_str()) == 0;
          return;
        }
        if (gone == 30) return;
      }
    });
    auto removed = RemoveTree(tree);
    mover.join();
    ASSERT_EQ(::access((outer + "/victim").c_str(), F_OK), 0)
        << "the removal of " << tree << " climbed above it (attempt " << attempt << ")";
    if (!removed) {
      EXPECT_NE(removed.error().message.find("was moved during the removal"), std::string::npos)
          << removed.error().ToString();
      moved_races += renamed ? 1 : 0;
    }
    if (::access(tree.c_str(), F_OK) != 0) {
      ASSERT_EQ(::mkdir(tree.c_str(), 0755), 0);
    }
  }
  // The race was really run, not just the straight path.
  EXPECT_GT(moved_races, 0);
  ASSERT_TRUE(RemoveTree(scratch));
}

// A pid that has exited: what a workspace of a runner in another pid namespace looks like here.
pid_t ExitedPid() {
  pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return pid;
}

// Sets a directory's modification time `seconds` back (forward, if negative): what a workspace
// left that long ago shows.
void Age(const std::string& path, int seconds) {
  struct timespec times[2];
  ASSERT_EQ(::clock_gettime(CLOCK_REALTIME, &times[0]), 0);
  times[0].tv_sec -= seconds;
  times[1] = times[0];
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, AT_SYMLINK_NOFOLLOW), 0);
}

TEST(TemporaryWorkspace, AStaleLookingWorkspaceThatIsLockedIsLeftAlone) {
  auto base = StateDirectory();
  ASSERT_TRUE(base) << base.error().ToString();
  const std::string locked = *base + "/ws-" + std::to_string(ExitedPid()) + "-Lk0ck1";
  const std::string unlocked = *base + "/ws-" + std::to_string(ExitedPid()) + "-Unl0ck";
  ASSERT_EQ(::mkdir(locked.c_str(), 0700), 0);
  ASSERT_EQ(::mkdir(unlocked.c_str(), 0700), 0);
  Age(locked, 3600);
  Age(unlocked, 3600);
  const int holder = ::open(locked.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_EQ(::flock(holder, LOCK_EX | LOCK_NB), 0);
  auto created = CreateTemporaryWorkspace(::geteuid(), ::getegid());  // sweeps stale ones first
  ASSERT_TRUE(created) << created.error().ToString();
  EXPECT_EQ(::access(locked.c_str(), F_OK), 0) << "a workspace in use elsewhere was swept";
  EXPECT_NE(::access(unlocked.c_str(), F_OK), 0) << "a really stale workspace was kept";
  // The new workspace is locked itself, so a sweep from elsewhere leaves it too.
  const int probe = ::open(created->path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  EXPECT_NE(::flock(probe, LOCK_EX | LOCK_NB), 0);
  ::close(probe);
  ::close(holder);
  ASSERT_TRUE(RemoveTree(locked));
  ASSERT_TRUE(RemoveTree(created->path));
}

// Between another runner's mkdtemp and its flock, its new workspace is unlocked, and if that
// runner is in another pid namespace its pid looks dead here: a sweep must leave it alone. The
// control: the same directory, a minute older, is swept.
TEST(TemporaryWorkspace, AWorkspaceCreatedMomentsAgoIsNotSweptBeforeItsRunnerLocksIt) {
  auto base = StateDirectory();
  ASSERT_TRUE(base) << base.error().ToString();
  const std::string young = *base + "/ws-" + std::to_string(ExitedPid()) + "-Y0ung1";
  ASSERT_EQ(::mkdir(young.c_str(), 0700), 0);
  auto first = CreateTemporaryWorkspace(::geteuid(), ::getegid());  // sweeps stale ones first
  ASSERT_TRUE(first) << first.error().ToString();
  EXPECT_EQ(::access(young.c_str(), F_OK), 0) << "a workspace not yet locked by its runner was swept";
  Age(young, 61);
  auto second = CreateTemporaryWorkspace(::geteuid(), ::getegid());
  ASSERT_TRUE(second) << second.error().ToString();
  EXPECT_NE(::access(young.c_str(), F_OK), 0) << "a stale workspace a minute old was kept";
  if (::access(young.c_str(), F_OK) == 0) {
    ASSERT_TRUE(RemoveTree(young));
  }
  // The sandbox's code owns its workspace and can date it into the future: that is stale too.
  const std::string dated = *base + "/ws-" + std::to_string(ExitedPid()) + "-Futur3";
  ASSERT_EQ(::mkdir(dated.c_str(), 0700), 0);
  Age(dated, -3600 * 24 * 365);
  auto third = CreateTemporaryWorkspace(::geteuid(), ::getegid());
  ASSERT_TRUE(third) << third.error().ToString();
  EXPECT_NE(::access(dated.c_str(), F_OK), 0) << "a workspace dated a year ahead was kept";
  if (::access(dated.c_str(), F_OK) == 0) {
    ASSERT_TRUE(RemoveTree(dated));
  }
  ASSERT_TRUE(RemoveTree(third->path));
  ASSERT_TRUE(RemoveTree(first->path));
  ASSERT_TRUE(RemoveTree(second->path));
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
