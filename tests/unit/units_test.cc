// Unit tests for size and duration parsing.
#include "base/units.h"

#include <gtest/gtest.h>

namespace sbx {
namespace {

TEST(ParseSize, AcceptsBytesAndBinaryUnits) {
  EXPECT_EQ(*ParseSize("0"), 0u);
  EXPECT_EQ(*ParseSize("4096"), 4096u);
  EXPECT_EQ(*ParseSize("512M"), 512ull << 20);
  EXPECT_EQ(*ParseSize("2G"), 2ull << 30);
  EXPECT_EQ(*ParseSize("2GiB"), 2ull << 30);
  EXPECT_EQ(*ParseSize("1k"), 1024u);
  EXPECT_EQ(*ParseSize("10B"), 10u);
}

TEST(ParseSize, RejectsMalformedAndOverflowingInput) {
  for (const char* bad : {"", "-1", "1.5G", "0x10", "12Q", "G", " 1", "1 G", "1GG",
                          "18446744073709551616", "17179869184G", "1BiB"}) {
    auto size = ParseSize(bad);
    EXPECT_FALSE(size) << bad;
    if (!size) {
      EXPECT_NE(size.error().message.find("size"), std::string::npos) << bad;
    }
  }
}

TEST(ParseSeconds, AcceptsFractionsRejectsOthers) {
  EXPECT_DOUBLE_EQ(*ParseSeconds("60"), 60.0);
  EXPECT_DOUBLE_EQ(*ParseSeconds("0.25"), 0.25);
  for (const char* bad : {"", "-1", "nan", "inf", "1e3", "0x1", "1s", "1.2.3"})
    EXPECT_FALSE(ParseSeconds(bad)) << bad;
}

TEST(FormatSize, UsesLargestExactUnit) {
  EXPECT_EQ(FormatSize(512ull << 20), "512M");
  EXPECT_EQ(FormatSize(1536), "1536");
  EXPECT_EQ(FormatSize(3ull << 40), "3T");
}

}  // namespace
}  // namespace sbx
