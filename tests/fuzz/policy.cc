// Fuzzes the strict policy loader (sandbox/policy/policy.h): ParsePolicyJson on a policy file's text,
// and ParseNetworkAllowlistJson, sbx-netd's reader of the allowlist the runner sends it.
//
// Invariants beyond "no crash": an error names what it refused in printable text; a loaded
// allowlist that validates survives NetworkAllowlistToJson and ParseNetworkAllowlistJson
// unchanged (the runner and sbx-netd read one allowlist alike), and so does one that
// ParseNetworkAllowlistJson accepted.
#include "sandbox/policy/policy.h"

#include <cstddef>
#include <cstdint>
#include <string>

#include "netpolicy/network_allowlist_json.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

void CheckMessage(const sbx::Error& error) {
  SBX_FUZZ_CHECK(!error.message.empty());
  for (char c : error.message) SBX_FUZZ_CHECK(c != '\0');
}

void CheckRoundTrip(const sbx::NetworkAllowlist& allowlist) {
  const std::string json = sbx::NetworkAllowlistToJson(allowlist);
  const auto again = sbx::ParseNetworkAllowlistJson(json);
  if (!again) {
    std::fprintf(stderr, "%s\n%s\n", json.c_str(), again.error().message.c_str());
  }
  SBX_FUZZ_CHECK(again.has_value());
  SBX_FUZZ_CHECK(*again == allowlist);
  SBX_FUZZ_CHECK(sbx::NetworkAllowlistToJson(*again) == json);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const auto policy = sbx::ParsePolicyJson(text);
  if (!policy) {
    CheckMessage(policy.error());
  } else if (policy->network == sbx::NetworkMode::kAllowlist &&
             sbx::ValidateNetworkAllowlist(policy->network_allowlist)) {
    CheckRoundTrip(policy->network_allowlist);
  }
  const auto allowlist = sbx::ParseNetworkAllowlistJson(text);
  if (!allowlist) {
    CheckMessage(allowlist.error());
  } else {
    CheckRoundTrip(*allowlist);
  }
  return 0;
}
