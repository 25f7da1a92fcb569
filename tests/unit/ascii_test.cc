// ASCII case folding: only A-Z fold; other bytes (UTF-8 included) stay as they are.
#include "base/ascii.h"

#include <gtest/gtest.h>

namespace sbx {
namespace {

TEST(Ascii, FoldsOnlyAToZ) {
  EXPECT_EQ(AsciiLower("API.Example.COM"), "api.example.com");
  EXPECT_EQ(AsciiLower("@[`{"), "@[`{");  // the bytes around A-Z
  // U+0130 (capital I with dot) and U+212A (Kelvin sign): their UTF-8 bytes are left alone,
  // so a name spelled with them can never fold into "i" or "k" and match a rule.
  EXPECT_EQ(AsciiLower("\xC4\xB0" "\xE2\x84\xAA"), "\xC4\xB0" "\xE2\x84\xAA");
}

TEST(Ascii, ComparesPrefixesAndWholeStrings) {
  EXPECT_TRUE(StartsWithIgnoreAsciiCase("HTTPS://x", "https://"));
  EXPECT_FALSE(StartsWithIgnoreAsciiCase("http", "https://"));
  EXPECT_TRUE(StartsWithIgnoreAsciiCase("anything", ""));
  EXPECT_TRUE(EqualsIgnoreAsciiCase("Keep-Alive", "keep-alive"));
  EXPECT_FALSE(EqualsIgnoreAsciiCase("keep-alive", "keep-alive2"));
  EXPECT_FALSE(EqualsIgnoreAsciiCase("\xE2\x84\xAA", "k"));
}

}  // namespace
}  // namespace sbx
