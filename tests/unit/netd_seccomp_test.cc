// sbx-netd's seccomp filter: the program embedded at build time is current.
#include <gtest/gtest.h>

#include "src/netd/netd_seccomp.h"

namespace sbx::netd {
namespace {

// The program embedded at build time must be exactly what libseccomp makes of the tables now.
TEST(NetdSeccompPrebuilt, EqualsAFreshCompile) {
  auto fresh = CompileNetdSeccompProgramUncached();
  ASSERT_TRUE(fresh) << fresh.error().ToString();
  const SeccompProgram& embedded = NetdSeccompProgram();
  ASSERT_EQ(embedded.instructions.size(), (*fresh)->instructions.size());
  for (size_t i = 0; i < (*fresh)->instructions.size(); ++i) {
    const sock_filter& a = embedded.instructions[i];
    const sock_filter& b = (*fresh)->instructions[i];
    EXPECT_TRUE(a.code == b.code && a.jt == b.jt && a.jf == b.jf && a.k == b.k) << "instruction " << i;
  }
}

}  // namespace
}  // namespace sbx::netd
