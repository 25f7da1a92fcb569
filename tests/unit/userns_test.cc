// Unit tests for the id-mapping decisions.
#include "sandbox/userns.h"

#include <gtest/gtest.h>

namespace sbx {
namespace {

TEST(IdMapping, RootModeMapsToTheReservedUnprivilegedId) {
  auto mapping = ComputeIdMapping(0, 0);
  ASSERT_TRUE(mapping);
  EXPECT_TRUE(mapping->root_mode);
  EXPECT_EQ(mapping->UidMapLine(), "0 2000000000 1\n1000 2000001000 1\n");
  EXPECT_EQ(mapping->GidMapLine(), "0 2000000000 1\n1000 2000001000 1\n");
}

TEST(IdMapping, RootlessMapsTheCallerTo1000) {
  auto mapping = ComputeIdMapping(1234, 2345);
  ASSERT_TRUE(mapping);
  EXPECT_FALSE(mapping->root_mode);
  EXPECT_EQ(mapping->UidMapLine(), "1000 1234 1\n");
  EXPECT_EQ(mapping->GidMapLine(), "1000 2345 1\n");
}

TEST(IdMapping, RefusesOverflowAndInvalidIds) {
  EXPECT_FALSE(ComputeIdMapping(65534, 100));
  EXPECT_FALSE(ComputeIdMapping(1000, 65534));
  EXPECT_FALSE(ComputeIdMapping(4294967295u, 100));
  EXPECT_FALSE(ComputeIdMapping(1000, 0));
}

}  // namespace
}  // namespace sbx
