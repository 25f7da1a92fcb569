// Flag parsing shared by `sbx run` and `sbx agent`, and the policy flags they share: --timeout,
// --memory, --pids, --cpus, --network, --isolation, --allow HOST[:PORTS], --env KEY=VALUE,
// --allow-degraded, each applied on top of the loaded policy.
#pragma once

#include <string>

#include "sandbox/error.h"
#include "sandbox/policy.h"

namespace sbx::cli {

// Splits "--flag=value" in `arg`, or takes the value from argv[i + 1] (advancing i). False
// when there is no value.
bool TakeFlagValue(int argc, char** argv, int& i, std::string& arg, std::string& value);

// Applies one "--flag value"; the error names the flag (an unknown flag is an error too).
// --allow appends an allow rule and switches the network to allowlist (an error with host).
Result<void> ApplyPolicyFlag(const std::string& flag, const std::string& value, Policy& policy);

}  // namespace sbx::cli
