// Unit tests for the error type's return macros (SBX_ASSIGN_OR_RETURN).
#include "base/error.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <memory>
#include <string>

namespace sbx {
namespace {

Result<int> Number(bool ok) {
  if (!ok) return InvalidInput("number: refused");
  return 7;
}

Result<std::unique_ptr<std::string>> Owned(bool ok) {
  if (!ok) return SysError(ErrorCode::kIo, "open(/nowhere)", ENOENT);
  return std::make_unique<std::string>("owned");
}

// Assigns to an existing variable, so the test can see whether it was written.
Result<int> AssignNumber(bool ok, int& out) {
  SBX_ASSIGN_OR_RETURN(out, Number(ok));
  return out + 1;
}

Result<std::string> DeclareOwned(bool ok) {
  SBX_ASSIGN_OR_RETURN(auto owned, Owned(ok));
  SBX_ASSIGN_OR_RETURN(const int number, Number(true));  // a second one in the same scope
  return *owned + std::to_string(number);
}

TEST(AssignOrReturn, FailureReturnsTheErrorUnchangedAndDoesNotAssign) {
  int out = -1;
  auto result = AssignNumber(false, out);
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code, ErrorCode::kInvalidInput);
  EXPECT_EQ(result.error().message, "number: refused");
  EXPECT_EQ(out, -1);

  auto owned = DeclareOwned(false);
  ASSERT_FALSE(owned);
  const Error expected = Owned(false).error();
  EXPECT_EQ(owned.error().code, expected.code);
  EXPECT_EQ(owned.error().err_no, ENOENT);
  EXPECT_EQ(owned.error().message, expected.message);
}

TEST(AssignOrReturn, SuccessMovesTheValueIntoAnExistingOrDeclaredVariable) {
  int out = -1;
  auto result = AssignNumber(true, out);
  ASSERT_TRUE(result);
  EXPECT_EQ(out, 7);
  EXPECT_EQ(*result, 8);

  auto owned = DeclareOwned(true);  // a move-only value
  ASSERT_TRUE(owned);
  EXPECT_EQ(*owned, "owned7");
}

}  // namespace
}  // namespace sbx
