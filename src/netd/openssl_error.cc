// OpenSSL's error queue as an Error; see openssl_error.h.
#include "src/netd/openssl_error.h"

#include <openssl/err.h>

namespace sbx::netd {

Error OpenSslError(ErrorCode code, const std::string& what) {
  const unsigned long queued = ERR_get_error();
  ERR_clear_error();
  char text[256] = "unknown error";
  if (queued != 0) ERR_error_string_n(queued, text, sizeof(text));
  return MakeError(code, "tls: " + what + ": " + text);
}

}  // namespace sbx::netd
