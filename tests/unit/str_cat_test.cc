// StrCat and Decimal: the pieces joined in order, numbers as their decimal digits.
#include "base/str_cat.h"

#include <cstdint>
#include <string>

#include <gtest/gtest.h>

namespace sbx {
namespace {

TEST(StrCat, JoinsThePiecesInOrder) {
  const std::string dir = "/sys/fs/cgroup/sbx-1-a";
  EXPECT_EQ(StrCat({dir, "/memory.max"}), "/sys/fs/cgroup/sbx-1-a/memory.max");
  EXPECT_EQ(StrCat({}), "");
  EXPECT_EQ(StrCat({"", "x", "", "yz"}), "xyz");
}

TEST(StrCat, NumbersAreTheirDecimalDigits) {
  EXPECT_EQ(StrCat({Decimal(0)}), "0");
  EXPECT_EQ(StrCat({Decimal(7)}), "7");
  EXPECT_EQ(StrCat({Decimal(1000)}), "1000");
  EXPECT_EQ(StrCat({Decimal(UINT64_MAX)}), "18446744073709551615");
  EXPECT_EQ(StrCat({"size=", Decimal(67108864), ",mode=1777"}), "size=67108864,mode=1777");
  for (uint64_t value : {uint64_t{9}, uint64_t{10}, uint64_t{99}, uint64_t{4294967295u}}) {
    EXPECT_EQ(StrCat({Decimal(value)}), std::to_string(value));
  }
}

}  // namespace
}  // namespace sbx
