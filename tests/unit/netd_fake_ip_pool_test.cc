// Unit tests for sbx-netd's fake-address pool.
#include "src/netd/fake_ip_pool.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

namespace sbx::netd {
namespace {

TEST(Fnv1a32, MatchesTheReferenceValues) {
  EXPECT_EQ(Fnv1a32(""), 0x811c9dc5u);
  EXPECT_EQ(Fnv1a32("a"), 0xe40c292cu);
  EXPECT_EQ(Fnv1a32("foobar"), 0xbf9cf968u);
}

TEST(FakeIpPool, SlotIsTheNamesHashAndStableAcrossPools) {
  FakeIpPool first, second;
  const auto a = first.Assign("pypi.org");
  ASSERT_TRUE(a);
  EXPECT_EQ(*a, kFakePoolBase + Fnv1a32("pypi.org") % kFakePoolSize);
  second.Assign("files.pythonhosted.org");
  EXPECT_EQ(second.Assign("pypi.org"), a);  // the same name, the same address, in every run
  EXPECT_TRUE(InFakeRange(*a));
  EXPECT_EQ(first.Assign("pypi.org"), a);  // asking again changes nothing
  EXPECT_EQ(first.size(), 1u);
}

TEST(FakeIpPool, CollisionsProbeToTheNextFreeSlot) {
  // Find two names whose slots collide (the birthday bound makes this quick).
  std::map<uint32_t, std::string> by_slot;
  std::string first, second;
  for (int i = 0; second.empty(); ++i) {
    const std::string name = "n" + std::to_string(i) + ".test";
    const uint32_t slot = Fnv1a32(name) % kFakePoolSize;
    if (slot == 0 || slot >= kFakePoolSize - 2) continue;
    auto [it, inserted] = by_slot.emplace(slot, name);
    if (!inserted) {
      first = it->second;
      second = name;
    }
  }
  FakeIpPool pool;
  const auto a = pool.Assign(first);
  const auto b = pool.Assign(second);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(*b, *a + 1);
  // The order of first use decides who gets the hashed slot, never whether both get one.
  FakeIpPool reversed;
  EXPECT_EQ(reversed.Assign(second), a);
  EXPECT_EQ(reversed.Assign(first), b);
}

TEST(FakeIpPool, ReverseLookupFindsOnlyHandedOutAddresses) {
  FakeIpPool pool;
  const auto a = pool.Assign("pypi.org");
  ASSERT_TRUE(a);
  ASSERT_NE(pool.NameOf(*a), nullptr);
  EXPECT_EQ(*pool.NameOf(*a), "pypi.org");
  EXPECT_EQ(pool.NameOf(*a + 1), nullptr);
  EXPECT_EQ(pool.AddressOf("pypi.org"), a);
  EXPECT_FALSE(pool.AddressOf("other.org"));
}

TEST(FakeIpPool, NeverReusesAnAddressAndStopsAtItsBound) {
  FakeIpPool pool;
  std::set<uint32_t> seen;
  for (uint32_t i = 0; i < kFakePoolMaxNames; ++i) {
    const auto address = pool.Assign("h" + std::to_string(i) + ".example.com");
    ASSERT_TRUE(address) << i;
    ASSERT_TRUE(seen.insert(*address).second) << i;
    ASSERT_NE(*address, kFakePoolBase);                      // 198.18.0.0
    ASSERT_NE(*address, kFakePoolBase + kFakePoolSize - 1);  // 198.19.255.255
  }
  EXPECT_FALSE(pool.Assign("one-too-many.example.com"));
  EXPECT_TRUE(pool.Assign("h0.example.com"));  // existing names keep their address
}

TEST(FakeIpPool, RangeAndFormatting) {
  EXPECT_TRUE(InFakeRange(0xc6120000));   // 198.18.0.0
  EXPECT_TRUE(InFakeRange(0xc613ffff));   // 198.19.255.255
  EXPECT_FALSE(InFakeRange(0xc6140000));  // 198.20.0.0
  EXPECT_FALSE(InFakeRange(0xc611ffff));  // 198.17.255.255
  EXPECT_EQ(Ipv4ToString(0xc6120411), "198.18.4.17");
}

}  // namespace
}  // namespace sbx::netd
