// Tests write their policies as plain Policy values and check them here, the way a product entry
// point does (ValidPolicy::Check); a policy a test meant to be valid but is not fails that test.
#pragma once

#include <gtest/gtest.h>

#include <utility>

#include "sandbox/policy/policy.h"

namespace sbx::testing {

inline ValidPolicy Checked(Policy policy) {
  auto checked = ValidPolicy::Check(std::move(policy));
  if (!checked) {
    ADD_FAILURE() << "a test's policy is invalid: " << checked.error().ToString();
    return ValidPolicy();
  }
  return *checked;
}

// `base` with `change` applied, checked again.
template <typename Change>
ValidPolicy Changed(const ValidPolicy& base, Change change) {
  Policy policy = base.get();
  change(policy);
  return Checked(std::move(policy));
}

}  // namespace sbx::testing
