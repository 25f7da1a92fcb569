// Mints the run's name-constrained CA and its per-host leaves with OpenSSL 3's libcrypto.
#include "src/netd/tls_ca.h"

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <ctime>
#include <memory>

#include "netpolicy/network_rules.h"
#include "src/netd/openssl_error.h"

namespace sbx::netd {
namespace {

template <auto Free>
struct OpenSslDeleter {
  template <typename T>
  void operator()(T* pointer) const {
    Free(pointer);
  }
};
using X509Ptr = std::unique_ptr<X509, OpenSslDeleter<X509_free>>;
using KeyPtr = std::unique_ptr<EVP_PKEY, OpenSslDeleter<EVP_PKEY_free>>;
using BioPtr = std::unique_ptr<BIO, OpenSslDeleter<BIO_free>>;
using BignumPtr = std::unique_ptr<BIGNUM, OpenSslDeleter<BN_free>>;
using ExtensionPtr = std::unique_ptr<X509_EXTENSION, OpenSslDeleter<X509_EXTENSION_free>>;

constexpr long kBackdateSeconds = 3600;
constexpr long kLifetimeSeconds = 24 * 3600;

// libcrypto failing here is an internal error: nothing in a policy leads to it.
Error CryptoError(const std::string& what) { return OpenSslError(ErrorCode::kInternal, what); }

Result<KeyPtr> NewP256Key() {
  KeyPtr key(EVP_EC_gen("P-256"));
  if (!key) return CryptoError("generate a P-256 key");
  return key;
}

// 128 random bits, the top one cleared so the DER INTEGER stays positive and 16 bytes long.
Result<void> SetRandomSerial(X509* cert) {
  unsigned char bytes[16];
  if (RAND_bytes(bytes, sizeof(bytes)) != 1) return CryptoError("RAND_bytes");
  bytes[0] &= 0x7f;
  BignumPtr number(BN_bin2bn(bytes, sizeof(bytes), nullptr));
  if (!number || BN_to_ASN1_INTEGER(number.get(), X509_get_serialNumber(cert)) == nullptr) {
    return CryptoError("set the serial number");
  }
  return Ok{};
}

Result<void> SetCommonName(X509_NAME* name, const std::string& common_name) {
  if (X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8,
                                 reinterpret_cast<const unsigned char*>(common_name.c_str()), -1,
                                 -1, 0) != 1) {
    return CryptoError("set CN");
  }
  return Ok{};
}

// `value` uses openssl's extension config syntax; the host names in it were checked to be
// LDH names first, so they cannot add a clause of their own (no ',' ';' ':').
Result<void> AddExtension(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX context;
  X509V3_set_ctx_nodb(&context);
  X509V3_set_ctx(&context, issuer, cert, nullptr, nullptr, 0);
  ExtensionPtr extension(X509V3_EXT_conf_nid(nullptr, &context, nid, value.c_str()));
  if (!extension || X509_add_ext(cert, extension.get(), -1) != 1) {
    return CryptoError(std::string("add ") + OBJ_nid2sn(nid) + " \"" + value + "\"");
  }
  return Ok{};
}

Result<PemCertificateAndKey> ToPem(X509* cert, EVP_PKEY* key) {
  BioPtr cert_bio(BIO_new(BIO_s_mem()));
  BioPtr key_bio(BIO_new(BIO_s_mem()));
  if (!cert_bio || !key_bio || PEM_write_bio_X509(cert_bio.get(), cert) != 1 ||
      PEM_write_bio_PrivateKey(key_bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr) != 1) {
    return CryptoError("write PEM");
  }
  PemCertificateAndKey pem;
  char* data = nullptr;
  long size = BIO_get_mem_data(cert_bio.get(), &data);
  pem.cert_pem.assign(data, static_cast<size_t>(size));
  size = BIO_get_mem_data(key_bio.get(), &data);
  pem.key_pem.assign(data, static_cast<size_t>(size));
  // The memory BIO's copy of the key is wiped before it is freed.
  OPENSSL_cleanse(data, static_cast<size_t>(size));
  return pem;
}

Result<std::string> CheckedHost(const std::string& host) {
  auto normalized = NormalizeHostName(host);
  if (!normalized || *normalized != host) {
    return InvalidInput("tls: \"" + host + "\": expected a normalized DNS name");
  }
  return *normalized;
}

// A certificate with version 3, a random serial and `key`'s public half; the caller sets
// names, validity and extensions, then signs.
Result<X509Ptr> NewCertificate(EVP_PKEY* key) {
  X509Ptr cert(X509_new());
  if (!cert || X509_set_version(cert.get(), 2) != 1 || X509_set_pubkey(cert.get(), key) != 1) {
    return CryptoError("create a certificate");
  }
  SBX_TRY(SetRandomSerial(cert.get()));
  return cert;
}

Result<void> Sign(X509* cert, EVP_PKEY* key) {
  if (X509_sign(cert, key, EVP_sha256()) == 0) return CryptoError("sign");
  return Ok{};
}

}  // namespace

Result<PemCertificateAndKey> MintRunCa(const std::vector<std::string>& hosts,
                                       const std::string& run_id) {
  if (hosts.empty()) return InvalidInput("tls: a run CA needs at least one host");
  std::string permitted = "critical";
  for (const std::string& host : hosts) {
    SBX_ASSIGN_OR_RETURN(auto checked, CheckedHost(host));
    permitted += ",permitted;DNS:" + checked;
  }
  // A name type with no subtree is unconstrained: without these, a leaked CA key could still
  // vouch for any IP address (a certificate with an IP subjectAltName).
  permitted += ",excluded;IP:0.0.0.0/0.0.0.0,excluded;IP:0:0:0:0:0:0:0:0/0:0:0:0:0:0:0:0";
  SBX_ASSIGN_OR_RETURN(auto key, NewP256Key());
  SBX_ASSIGN_OR_RETURN(auto cert, NewCertificate(key.get()));
  X509* ca = cert.get();
  SBX_TRY(SetCommonName(X509_get_subject_name(ca), "sbx run CA " + run_id));
  if (X509_set_issuer_name(ca, X509_get_subject_name(ca)) != 1 ||
      X509_gmtime_adj(X509_getm_notBefore(ca), -kBackdateSeconds) == nullptr ||
      X509_gmtime_adj(X509_getm_notAfter(ca), kLifetimeSeconds) == nullptr) {
    return CryptoError("set the CA's issuer and validity");
  }
  SBX_TRY(AddExtension(ca, ca, NID_basic_constraints, "critical,CA:TRUE,pathlen:0"));
  SBX_TRY(AddExtension(ca, ca, NID_key_usage, "critical,keyCertSign,cRLSign"));
  SBX_TRY(AddExtension(ca, ca, NID_subject_key_identifier, "hash"));
  SBX_TRY(AddExtension(ca, ca, NID_name_constraints, permitted));
  SBX_TRY(Sign(ca, key.get()));
  return ToPem(ca, key.get());
}

Result<PemCertificateAndKey> MintLeaf(const PemCertificateAndKey& ca, const std::string& host) {
  SBX_ASSIGN_OR_RETURN(auto checked, CheckedHost(host));
  BioPtr cert_bio(BIO_new_mem_buf(ca.cert_pem.data(), static_cast<int>(ca.cert_pem.size())));
  BioPtr key_bio(BIO_new_mem_buf(ca.key_pem.data(), static_cast<int>(ca.key_pem.size())));
  X509Ptr ca_cert(cert_bio ? PEM_read_bio_X509(cert_bio.get(), nullptr, nullptr, nullptr)
                           : nullptr);
  KeyPtr ca_key(key_bio ? PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr)
                        : nullptr);
  if (!ca_cert || !ca_key) {
    ERR_clear_error();
    return InvalidInput("tls: the CA certificate or key is not valid PEM");
  }
  if (X509_check_private_key(ca_cert.get(), ca_key.get()) != 1) {
    ERR_clear_error();
    return InvalidInput("tls: the CA key does not belong to the CA certificate");
  }
  SBX_ASSIGN_OR_RETURN(auto key, NewP256Key());
  SBX_ASSIGN_OR_RETURN(auto cert, NewCertificate(key.get()));
  X509* leaf = cert.get();
  SBX_TRY(SetCommonName(X509_get_subject_name(leaf), checked));
  if (X509_set_issuer_name(leaf, X509_get_subject_name(ca_cert.get())) != 1 ||
      X509_set1_notBefore(leaf, X509_get0_notBefore(ca_cert.get())) != 1 ||
      X509_set1_notAfter(leaf, X509_get0_notAfter(ca_cert.get())) != 1) {
    return CryptoError("set the leaf's issuer and validity");
  }
  SBX_TRY(AddExtension(leaf, ca_cert.get(), NID_basic_constraints, "critical,CA:FALSE"));
  SBX_TRY(AddExtension(leaf, ca_cert.get(), NID_key_usage, "critical,digitalSignature"));
  SBX_TRY(AddExtension(leaf, ca_cert.get(), NID_ext_key_usage, "serverAuth"));
  SBX_TRY(AddExtension(leaf, ca_cert.get(), NID_subject_alt_name, "DNS:" + checked));
  SBX_TRY(AddExtension(leaf, ca_cert.get(), NID_authority_key_identifier, "keyid"));
  SBX_TRY(Sign(leaf, ca_key.get()));
  return ToPem(leaf, key.get());
}

}  // namespace sbx::netd
