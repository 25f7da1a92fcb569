// Parses the policy's CA files with OpenSSL; see ca_files.h.
#include "src/netd/ca_files.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <string_view>

namespace sbx::netd {
namespace {

constexpr std::string_view kBeginCertificate = "-----BEGIN CERTIFICATE-----";

size_t CountBlocks(const std::string& pem) {
  size_t count = 0;
  for (size_t at = pem.find(kBeginCertificate); at != std::string::npos;
       at = pem.find(kBeginCertificate, at + kBeginCertificate.size())) {
    ++count;
  }
  return count;
}

// How many certificates parse from the start of `pem`, up to the first that does not; the
// reason of that failure in `*why`.
size_t CountParsed(const std::string& pem, std::string* why) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  if (bio == nullptr) return 0;
  size_t parsed = 0;
  while (X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) {
    X509_free(cert);
    ++parsed;
  }
  BIO_free(bio);
  char text[256] = "";
  if (const unsigned long code = ERR_peek_last_error(); code != 0) {
    ERR_error_string_n(code, text, sizeof(text));
  }
  ERR_clear_error();  // the loop also ends on "no start line" after the last one
  *why = text;
  return parsed;
}

}  // namespace

Result<void> CheckCaFiles(const std::string& field, const std::vector<std::string>& pems,
                          const std::vector<std::string>& paths) {
  for (size_t i = 0; i < pems.size(); ++i) {
    const std::string where =
        field + "[" + std::to_string(i) + "]: " + (i < paths.size() ? paths[i] : "?");
    const size_t blocks = CountBlocks(pems[i]);
    if (blocks == 0) {
      return InvalidInput(where + ": no PEM certificate in it (-----BEGIN CERTIFICATE-----)");
    }
    std::string why;
    const size_t parsed = CountParsed(pems[i], &why);
    if (parsed < blocks) {
      return InvalidInput(where + ": certificate " + std::to_string(parsed + 1) + " of " +
                          std::to_string(blocks) + " is not valid X.509 (" + why +
                          "); replace the file with the CA's PEM certificate");
    }
  }
  return Ok{};
}

}  // namespace sbx::netd
