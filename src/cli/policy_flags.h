// Flag parsing shared by `sbx run` and `sbx agent`, and the policy flags they share: --timeout,
// --memory, --pids, --cpus, --network, --isolation, --allow HOST[:PORTS], --env KEY=VALUE,
// --allow-degraded, each applied on top of the loaded policy.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "base/error.h"
#include "sandbox/policy/policy.h"

namespace sbx::cli {

// Splits "--flag=value" in `arg`, or takes the value from argv[i + 1] (advancing i). False
// when there is no value.
bool TakeFlagValue(int argc, char** argv, int& i, std::string& arg, std::string& value);

// Applies one "--flag value"; the error names the flag (an unknown flag is an error too).
// --allow appends an allow rule and switches the network to allowlist (an error with host).
Result<void> ApplyPolicyFlag(const std::string& flag, const std::string& value, Policy& policy);

using PolicyFlags = std::vector<std::pair<std::string, std::string>>;  // in the order given

// The one way a command gets its policy: the file (empty: the built-in default), then each
// flag in order, then the check that makes it a ValidPolicy. Used by `sbx run`, `sbx agent` and
// `sbx serve`.
Result<ValidPolicy> ResolvePolicy(const std::string& policy_file, const PolicyFlags& flags);

// The run's image directory. `given` (--image, or the team file's image; `given_field` names
// it in errors) wins over the policy's "image"; with neither, the default image. Isolation
// "outer" has no image: "" is returned, and a given image is refused.
Result<std::string> ResolveRunImage(const std::string& given, const std::string& given_field,
                                    const Policy& policy);

}  // namespace sbx::cli
