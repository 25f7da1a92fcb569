// Unit tests for the id-mapping decisions.
#include "sandbox/isolation/userns.h"

#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "base/small_file.h"

namespace sbx {
namespace {

const std::vector<IdRange> kHostMap = {{0, 0, 4294967295u}};

TEST(IdMapping, RootModeMapsToTheReservedUnprivilegedId) {
  auto mapping = ComputeIdMapping(0, 0, kHostMap, kHostMap);
  ASSERT_TRUE(mapping);
  EXPECT_TRUE(mapping->root_mode);
  EXPECT_EQ(mapping->UidMapLine(), "0 2000000000 1\n1000 2000001000 1\n");
  EXPECT_EQ(mapping->GidMapLine(), "0 2000000000 1\n1000 2000001000 1\n");
}

TEST(IdMapping, RootInAUserNamespacedPodUsesItsHighestIdsBelowOverflow) {
  // Kubernetes' hostUsers: false: the pod's 0-65535 map to a range on the node.
  const std::vector<IdRange> pod = {{0, 1000000, 65536}};
  auto mapping = ComputeIdMapping(0, 0, pod, pod);
  ASSERT_TRUE(mapping);
  EXPECT_TRUE(mapping->root_mode);
  EXPECT_EQ(mapping->UidMapLine(), "0 65532 1\n1000 65533 1\n");
  EXPECT_EQ(mapping->GidMapLine(), "0 65532 1\n1000 65533 1\n");
  // podman's --userns=auto minimum, and a map in two pieces: the highest pair wins.
  auto small = ComputeIdMapping(0, 0, {{0, 1000000, 1024}}, {{0, 5000, 10}, {10, 9000, 90}});
  ASSERT_TRUE(small);
  EXPECT_EQ(small->UidMapLine(), "0 1022 1\n1000 1023 1\n");
  EXPECT_EQ(small->GidMapLine(), "0 98 1\n1000 99 1\n");
}

TEST(IdMapping, RootInANamespaceWithoutTwoSpareIdsIsRefusedWithTheFix) {
  auto mapping = ComputeIdMapping(0, 0, {{0, 1000, 1}}, {{0, 1000, 1}});
  ASSERT_FALSE(mapping);
  EXPECT_NE(mapping.error().message.find("hostUsers: false"), std::string::npos)
      << mapping.error().message;
  EXPECT_FALSE(ComputeIdMapping(0, 0, {{65534, 1, 2}}, {{65534, 1, 2}}));
}

TEST(IdMapping, ParsesProcIdMaps) {
  auto ranges = ParseIdMap("         0    1000000      65536\n      1000 2000 1\n");
  ASSERT_TRUE(ranges);
  ASSERT_EQ(ranges->size(), 2u);
  EXPECT_EQ((*ranges)[0].outside, 1000000u);
  EXPECT_EQ((*ranges)[1].count, 1u);
  EXPECT_FALSE(ParseIdMap("0 1000000\n"));
  EXPECT_FALSE(ParseIdMap("0 1 2 3\n"));
  EXPECT_FALSE(ParseIdMap("0 1x 2\n"));
  EXPECT_FALSE(ParseIdMap("0 -1 2\n"));
  EXPECT_FALSE(ParseIdMap("0 4294967296 1\n"));  // above 2^32 - 1
  auto widest = ParseIdMap("\t0\t4294967295 1");  // tabs, no final newline
  ASSERT_TRUE(widest);
  ASSERT_EQ(widest->size(), 1u);
  EXPECT_EQ((*widest)[0].outside, 4294967295u);
  auto blank = ParseIdMap("\n   \n");
  ASSERT_TRUE(blank);
  EXPECT_TRUE(blank->empty());
}

TEST(IdMapping, RootlessMapsTheCallerTo1000) {
  auto mapping = ComputeIdMapping(1234, 2345, kHostMap, kHostMap);
  ASSERT_TRUE(mapping);
  EXPECT_FALSE(mapping->root_mode);
  EXPECT_EQ(mapping->UidMapLine(), "1000 1234 1\n");
  EXPECT_EQ(mapping->GidMapLine(), "1000 2345 1\n");
}

TEST(IdMapping, RefusesOverflowAndInvalidIds) {
  EXPECT_FALSE(ComputeIdMapping(65534, 100, kHostMap, kHostMap));
  EXPECT_FALSE(ComputeIdMapping(1000, 65534, kHostMap, kHostMap));
  EXPECT_FALSE(ComputeIdMapping(4294967295u, 100, kHostMap, kHostMap));
  EXPECT_FALSE(ComputeIdMapping(1000, 0, kHostMap, kHostMap));
}

// The kernel's own name for the namespace, with its inode: "user:[4026531837]" is the initial one.
std::string UserNamespaceLink() {
  char link[64] = {};
  ssize_t n = ::readlink("/proc/self/ns/user", link, sizeof(link) - 1);
  return n > 0 ? std::string(link, static_cast<size_t>(n)) : "";
}

TEST(IdMapping, TheInitialNamespaceIsKnownWithoutReadingItsMaps) {
  const bool initial = UserNamespaceLink() == "user:[4026531837]";
  EXPECT_EQ(InInitialUserNamespace(), initial) << UserNamespaceLink();
  // Where the maps are not read, the mapping is the one they would give.
  auto uids = ParseIdMap(*ReadSmallFile("/proc/self/uid_map"));
  auto gids = ParseIdMap(*ReadSmallFile("/proc/self/gid_map"));
  ASSERT_TRUE(uids && gids);
  for (uid_t caller : {0u, 1234u}) {
    auto read = ComputeIdMapping(caller, caller, *uids, *gids);
    auto own = ComputeIdMapping(caller, caller);
    ASSERT_EQ(static_cast<bool>(read), static_cast<bool>(own)) << caller;
    if (read) {
      EXPECT_EQ(own->UidMapLine(), read->UidMapLine()) << caller;
      EXPECT_EQ(own->GidMapLine(), read->GidMapLine()) << caller;
    }
  }
}

TEST(IdMapping, ANewUserNamespaceIsNotTheInitialOne) {
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (::unshare(CLONE_NEWUSER) != 0) ::_exit(2);
    ::_exit(InInitialUserNamespace() ? 1 : 0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_NE(WEXITSTATUS(status), 2)
      << "unshare(CLONE_NEWUSER) failed: this kernel has no user namespaces";
  EXPECT_EQ(WEXITSTATUS(status), 0) << "a new user namespace was taken for the initial one";
}

}  // namespace
}  // namespace sbx
