// The "tls" object of the runner's first control message (sandbox/network_helper_protocol.h):
// what secret injection needs, resolved by the runner so that netd reads no file.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sandbox/error.h"
#include "src/netd/secret.h"

namespace sbx::netd {

// secrets[i] belongs to network.inject[i].
struct InjectSecret {
  Secret value;        // the whole header value, never empty, no CR, LF or NUL
  Secret placeholder;  // "" or "sbx-ph-<32 lower-case hex>"
};

struct TlsConfig {
  std::string ca_cert_pem;
  Secret ca_key_pem;
  std::string upstream_ca_pem;  // "" when the policy names no upstream_ca_files
  std::vector<InjectSecret> secrets;
};

// Strict: exactly the four keys, strings where strings belong, secrets.size() == inject_count,
// each secret {"value":...,"placeholder":...}. Errors name the field ("tls.secrets[1].value")
// and never quote a value. The secret strings in `tls` are wiped once copied, even on error.
Result<TlsConfig> ParseTlsConfig(nlohmann::json& tls, size_t inject_count);

// Wipes every string in `value` (recursively) in place.
void WipeJsonStrings(nlohmann::json& value);

}  // namespace sbx::netd
