// A running SHA-256 with libcrypto's SHA256_* functions; see log_digest.h.
//
// Not the EVP interface: its first use initialises all of libcrypto (reads openssl.cnf, loads
// the error strings, registers every cipher and builds the provider's name map): CPU in every
// run's netd, most of it spent while the sandbox is being set up beside it. SHA256_*
// is the same implementation without that machinery; OpenSSL 3 marks it deprecated, not gone.
#define OPENSSL_SUPPRESS_DEPRECATED
#include "src/netd/log_digest.h"

#include <openssl/sha.h>

#include <cstdio>

namespace sbx::netd {

struct LogDigest::State {
  SHA256_CTX context;
};

LogDigest::LogDigest() : state_(std::make_unique<State>()) {
  failed_ = SHA256_Init(&state_->context) != 1;
}

LogDigest::~LogDigest() = default;

void LogDigest::Update(const char* data, size_t size) {
  if (size == 0) return;
  size_ += size;
  if (failed_ || SHA256_Update(&state_->context, data, size) != 1) failed_ = true;
}

std::string LogDigest::HexDigest() const {
  if (failed_) return "";
  // Finalised on a copy, so the log may go on growing (and a second call agrees).
  SHA256_CTX copy = state_->context;
  unsigned char digest[SHA256_DIGEST_LENGTH];
  if (SHA256_Final(digest, &copy) != 1) return "";
  std::string hex;
  char byte[3];
  for (unsigned char value : digest) {
    std::snprintf(byte, sizeof(byte), "%02x", value);
    hex += byte;
  }
  return hex;
}

}  // namespace sbx::netd
