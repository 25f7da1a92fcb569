// A session's policy: the server's own, or the server's tightened by a request's inline policy.
// A client of the server is not trusted with more than the server's operator granted, so an
// inline policy may lower limits, narrow the network and drop degradable layers, never the
// reverse; the error names the field and the server's value.
#pragma once

#include <string>

#include "base/error.h"
#include "sandbox/policy/policy.h"

namespace sbx::server {

// `inline_json` is a policy object (policies/SCHEMA.md). What it leaves out is the server's:
// an inline `{"limits": {"memory": "128M"}}` changes the memory limit and nothing else. Its
// `env` is added to the server's.
Result<ValidPolicy> TightenPolicy(const Policy& server, const std::string& inline_json);

// Whether `requested` is at most `server` in every respect; the error names the first field
// that is not.
Result<void> CheckTightens(const Policy& server, const Policy& requested);

}  // namespace sbx::server
