// Unit tests for the run CA and its leaves: what verifies, what the name constraints refuse,
// the CA's fields, and bad input.
#include "src/netd/tls_ca.h"

#include <gtest/gtest.h>
#include <openssl/bio.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>

namespace sbx::netd {
namespace {

struct X509Free {
  void operator()(X509* cert) const { X509_free(cert); }
};
using X509Ptr = std::unique_ptr<X509, X509Free>;

X509Ptr ReadCert(const std::string& pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  X509Ptr cert(PEM_read_bio_X509(bio, nullptr, nullptr, nullptr));
  BIO_free(bio);
  return cert;
}

// X509_verify_cert of `leaf_pem` against `ca_pem` as the only trust anchor, for TLS server use:
// X509_V_OK or the error.
int Verify(const std::string& ca_pem, const std::string& leaf_pem) {
  X509Ptr ca = ReadCert(ca_pem), leaf = ReadCert(leaf_pem);
  if (!ca || !leaf) return -1;
  X509_STORE* store = X509_STORE_new();
  X509_STORE_add_cert(store, ca.get());
  X509_STORE_CTX* context = X509_STORE_CTX_new();
  X509_STORE_CTX_init(context, store, leaf.get(), nullptr);
  X509_STORE_CTX_set_purpose(context, X509_PURPOSE_SSL_SERVER);
  const int ok = X509_verify_cert(context);
  const int error = X509_STORE_CTX_get_error(context);
  X509_STORE_CTX_free(context);
  X509_STORE_free(store);
  return ok == 1 ? X509_V_OK : error;
}

bool MatchesHost(const std::string& leaf_pem, const std::string& host) {
  X509Ptr leaf = ReadCert(leaf_pem);
  return leaf && X509_check_host(leaf.get(), host.data(), host.size(), 0, nullptr) == 1;
}

TEST(TlsCa, LeafForAnInjectHostVerifiesAndMatchesTheHost) {
  auto ca = MintRunCa({"api.test", "api.example.com"}, "r1");
  ASSERT_TRUE(ca) << ca.error().message;
  EXPECT_NE(ca->key_pem.find("BEGIN PRIVATE KEY"), std::string::npos);  // PKCS#8
  for (const char* host : {"api.test", "api.example.com"}) {
    auto leaf = MintLeaf(*ca, host);
    ASSERT_TRUE(leaf) << leaf.error().message;
    EXPECT_EQ(Verify(ca->cert_pem, leaf->cert_pem), X509_V_OK) << host;
    EXPECT_TRUE(MatchesHost(leaf->cert_pem, host));
    EXPECT_FALSE(MatchesHost(leaf->cert_pem, "evil.test"));
  }
}

// A certificate for an IP address, signed with the run CA's key by the openssl tool (MintLeaf
// only makes DNS names): what a leaked key could try.
TEST(TlsCa, IpAddressCertificatesAreExcluded) {
  auto ca = MintRunCa({"api.test"}, "r1");
  ASSERT_TRUE(ca);
  char dir_template[] = "/tmp/sbx-tls-ca-test-XXXXXX";
  ASSERT_NE(::mkdtemp(dir_template), nullptr);
  const std::string dir = dir_template;
  std::ofstream(dir + "/ca.pem") << ca->cert_pem;
  std::ofstream(dir + "/ca.key") << ca->key_pem;
  std::ofstream(dir + "/ext") << "subjectAltName=IP:203.0.113.7\n";
  const std::string command =
      "cd " + dir + " && openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "
      "-keyout leaf.key -subj /CN=203.0.113.7 -out leaf.csr 2>/dev/null && openssl x509 -req "
      "-in leaf.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 1 -extfile ext -out leaf.pem "
      "2>/dev/null";
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  std::ifstream in(dir + "/leaf.pem");
  const std::string leaf((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::system(("rm -rf " + dir).c_str());
  ASSERT_NE(leaf.find("BEGIN CERTIFICATE"), std::string::npos);
  EXPECT_EQ(Verify(ca->cert_pem, leaf), X509_V_ERR_EXCLUDED_VIOLATION);
}

TEST(TlsCa, LeafOutsideTheNameConstraintsFailsVerification) {
  auto ca = MintRunCa({"api.test"}, "r1");
  ASSERT_TRUE(ca);
  // The CA key signs anything; the constraints are what make such a leaf worthless.
  auto leaf = MintLeaf(*ca, "evil.test");
  ASSERT_TRUE(leaf) << leaf.error().message;
  EXPECT_EQ(Verify(ca->cert_pem, leaf->cert_pem), X509_V_ERR_PERMITTED_VIOLATION);
}

TEST(TlsCa, LeafFromAnotherCaDoesNotVerify) {
  auto ca = MintRunCa({"api.test"}, "r1");
  auto other = MintRunCa({"api.test"}, "r2");
  ASSERT_TRUE(ca && other);
  auto leaf = MintLeaf(*other, "api.test");
  ASSERT_TRUE(leaf);
  EXPECT_NE(Verify(ca->cert_pem, leaf->cert_pem), X509_V_OK);
}

TEST(TlsCa, CaFieldsAreAsDocumented) {
  auto ca = MintRunCa({"api.test"}, "r7");
  ASSERT_TRUE(ca);
  X509Ptr cert = ReadCert(ca->cert_pem);
  ASSERT_TRUE(cert);
  char cn[128] = {};
  X509_NAME_get_text_by_NID(X509_get_subject_name(cert.get()), NID_commonName, cn, sizeof(cn));
  EXPECT_STREQ(cn, "sbx run CA r7");
  // X509_check_ca: 1 for a v3 CA with basicConstraints CA:TRUE and keyCertSign.
  EXPECT_EQ(X509_check_ca(cert.get()), 1);
  EXPECT_EQ(X509_get_pathlen(cert.get()), 0);
  EXPECT_EQ(X509_get_key_usage(cert.get()), static_cast<uint32_t>(KU_KEY_CERT_SIGN | KU_CRL_SIGN));
  for (int nid : {NID_basic_constraints, NID_key_usage, NID_name_constraints}) {
    const int at = X509_get_ext_by_NID(cert.get(), nid, -1);
    ASSERT_GE(at, 0) << OBJ_nid2sn(nid);
    EXPECT_EQ(X509_EXTENSION_get_critical(X509_get_ext(cert.get(), at)), 1) << OBJ_nid2sn(nid);
  }
  EXPECT_EQ(EVP_PKEY_get_bits(X509_get0_pubkey(cert.get())), 256);
  const ASN1_INTEGER* serial = X509_get0_serialNumber(cert.get());
  EXPECT_GE(serial->length, 15);  // 128 random bits, top bit cleared
  EXPECT_GT(X509_cmp_current_time(X509_get0_notAfter(cert.get())), 0);
  EXPECT_LT(X509_cmp_current_time(X509_get0_notBefore(cert.get())), 0);
}

TEST(TlsCa, LeafFieldsAreAsDocumented) {
  auto ca = MintRunCa({"api.test"}, "r1");
  ASSERT_TRUE(ca);
  auto leaf = MintLeaf(*ca, "api.test");
  ASSERT_TRUE(leaf);
  X509Ptr cert = ReadCert(leaf->cert_pem);
  ASSERT_TRUE(cert);
  EXPECT_EQ(X509_check_ca(cert.get()), 0);
  EXPECT_EQ(X509_get_key_usage(cert.get()), static_cast<uint32_t>(KU_DIGITAL_SIGNATURE));
  EXPECT_EQ(X509_get_extended_key_usage(cert.get()), static_cast<uint32_t>(XKU_SSL_SERVER));
  X509Ptr ca_cert = ReadCert(ca->cert_pem);
  EXPECT_EQ(ASN1_TIME_compare(X509_get0_notAfter(cert.get()), X509_get0_notAfter(ca_cert.get())),
            0);
}

TEST(TlsCa, BadInputIsAnError) {
  EXPECT_FALSE(MintRunCa({}, "r1"));
  EXPECT_FALSE(MintRunCa({"api.test", "bad name"}, "r1"));
  EXPECT_FALSE(MintRunCa({"a.test,permitted;DNS:evil.test"}, "r1"));
  EXPECT_FALSE(MintRunCa({"API.test"}, "r1"));  // not normalized
  auto ca = MintRunCa({"api.test"}, "r1");
  ASSERT_TRUE(ca);
  EXPECT_FALSE(MintLeaf(PemCertificateAndKey{"not pem", ca->key_pem}, "api.test"));
  EXPECT_FALSE(MintLeaf(PemCertificateAndKey{ca->cert_pem, "not pem"}, "api.test"));
  auto other = MintRunCa({"api.test"}, "r2");
  ASSERT_TRUE(other);
  EXPECT_FALSE(MintLeaf(PemCertificateAndKey{ca->cert_pem, other->key_pem}, "api.test"));
  EXPECT_FALSE(MintLeaf(*ca, ""));
  EXPECT_FALSE(MintLeaf(*ca, "api.test\r\nX: y"));
}

}  // namespace
}  // namespace sbx::netd
