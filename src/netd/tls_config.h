// The "tls" object of the runner's first control message (netpolicy/netd_protocol.h):
// what secret injection needs, resolved by the runner so that netd reads no file.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "src/netd/secret.h"

namespace sbx::netd {

// secrets[i] belongs to network.inject[i].
struct InjectSecret {
  Secret value;        // the whole header value, never empty, no CR, LF or NUL
  Secret placeholder;  // "" or "sbx-ph-<32 lower-case hex>"
};

// The run's CA is not here: netd mints it (MitmContext), so its key never leaves netd.
struct TlsConfig {
  // upstream_ca_pems[i]: network.upstream_ca_files[i], from the CA files' memfd (control.h).
  std::vector<std::string> upstream_ca_pems;
  std::vector<InjectSecret> secrets;
};

// Strict: exactly {"secrets":[...]}, secrets.size() == inject_count, each secret
// {"value":...,"placeholder":...}. Errors name the field ("tls.secrets[1].value") and never
// quote a value. The secret strings in `tls` are wiped once copied, even on error.
Result<TlsConfig> ParseTlsConfig(nlohmann::json& tls, size_t inject_count);

// Wipes every string in `value` (recursively) in place.
void WipeJsonStrings(nlohmann::json& value);

}  // namespace sbx::netd
