// Errors from libcrypto and libssl calls, in the project's Error type, for every file of
// sbx-netd that calls OpenSSL (the run CA, the MITM contexts).
#pragma once

#include <string>

#include "base/error.h"

namespace sbx::netd {

// "tls: <what>: <OpenSSL's oldest queued error>" ("unknown error" when the queue is empty),
// with `code`. Empties OpenSSL's error queue, so a stale entry cannot be blamed on a later
// call.
Error OpenSslError(ErrorCode code, const std::string& what);

}  // namespace sbx::netd
