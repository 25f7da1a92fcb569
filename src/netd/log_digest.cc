// A running SHA-256 with libcrypto's EVP interface; see log_digest.h.
#include "src/netd/log_digest.h"

#include <openssl/evp.h>

#include <cstdio>

namespace sbx::netd {

void LogDigest::Free::operator()(evp_md_ctx_st* context) const { EVP_MD_CTX_free(context); }

LogDigest::LogDigest() : context_(EVP_MD_CTX_new()) {
  failed_ = !context_ || EVP_DigestInit_ex(context_.get(), EVP_sha256(), nullptr) != 1;
}

LogDigest::~LogDigest() = default;

void LogDigest::Update(const char* data, size_t size) {
  if (size == 0) return;
  size_ += size;
  if (failed_ || EVP_DigestUpdate(context_.get(), data, size) != 1) failed_ = true;
}

std::string LogDigest::HexDigest() const {
  if (failed_) return "";
  // Finalised on a copy, so the log may go on growing (and a second call agrees).
  std::unique_ptr<evp_md_ctx_st, Free> copy(EVP_MD_CTX_new());
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (!copy || EVP_MD_CTX_copy_ex(copy.get(), context_.get()) != 1 ||
      EVP_DigestFinal_ex(copy.get(), digest, &length) != 1) {
    return "";
  }
  std::string hex;
  char byte[3];
  for (unsigned int i = 0; i < length; ++i) {
    std::snprintf(byte, sizeof(byte), "%02x", digest[i]);
    hex += byte;
  }
  return hex;
}

}  // namespace sbx::netd
