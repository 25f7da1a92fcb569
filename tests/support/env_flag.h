// EnvFlag: whether a test switch in the environment is on, the one way tests read them.
#pragma once

#include <cstdlib>
#include <string_view>

namespace sbx::testing {

// True when the variable `name` is exactly "1" (tools/test.sh and tools/vm set such switches:
// SBX_IN_CGROUP2_VM, SBX_REQUIRE_NET_TOPOLOGY).
inline bool EnvFlag(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && std::string_view(value) == "1";
}

}  // namespace sbx::testing
