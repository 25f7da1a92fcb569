// Builds the upstream TLS context and the per-host server contexts of the MITM path.
#include "src/netd/mitm_context.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <algorithm>

#include "src/netd/openssl_error.h"
#include "src/netd/tls_ca.h"

namespace sbx::netd {
namespace {

namespace ssl = boost::asio::ssl;

// ALPN wire format: a length byte, then the protocol. HTTP/2 is never offered (its HPACK
// headers are not parsed here), so both legs speak HTTP/1.1.
constexpr unsigned char kAlpnHttp11[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};

Error TlsSetupError(const std::string& what) { return OpenSslError(ErrorCode::kSetupFailed, what); }

int SelectHttp11(SSL*, const unsigned char** out, unsigned char* out_length,
                 const unsigned char* offered, unsigned int offered_length, void*) {
  unsigned char* selected = nullptr;
  if (SSL_select_next_proto(&selected, out_length, kAlpnHttp11, sizeof(kAlpnHttp11), offered,
                            offered_length) != OPENSSL_NPN_NEGOTIATED) {
    return SSL_TLSEXT_ERR_NOACK;  // no ALPN in the reply; a client that insists on h2 fails
  }
  *out = selected;
  return SSL_TLSEXT_ERR_OK;
}

// Adds every certificate of `pem` (checked by CheckCaFiles) to `store`.
Result<void> AddCertificates(X509_STORE* store, const std::string& pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  if (bio == nullptr) return TlsSetupError("BIO_new_mem_buf");
  while (X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) {
    const int ok = X509_STORE_add_cert(store, cert);
    X509_free(cert);
    if (ok != 1) {
      BIO_free(bio);
      return TlsSetupError("add an upstream CA");
    }
  }
  BIO_free(bio);
  ERR_clear_error();  // the loop ends on "no start line"
  return Ok{};
}

// The host's store, as OpenSSL was built to find it: the bundle file, read now, and the hashed
// directory, read per lookup ("<dir>/<hash>.0"). Not SSL_CTX_set_default_verify_paths: in
// OpenSSL 3 it also adds the "store" loader, which lists the directory (an O_DIRECTORY open and
// getdents that netd's seccomp filter kills); these lookups only open files read-only.
Result<void> AddHostTrustStore(X509_STORE* store) {
  X509_LOOKUP* file = X509_STORE_add_lookup(store, X509_LOOKUP_file());
  X509_LOOKUP* directory = X509_STORE_add_lookup(store, X509_LOOKUP_hash_dir());
  if (file == nullptr || directory == nullptr) return TlsSetupError("upstream: trust store lookups");
  // A host without one of them verifies with the other (or only upstream_ca_pem).
  X509_LOOKUP_load_file(file, X509_get_default_cert_file(), X509_FILETYPE_PEM);
  X509_LOOKUP_add_dir(directory, X509_get_default_cert_dir(), X509_FILETYPE_PEM);
  ERR_clear_error();
  return Ok{};
}

}  // namespace

MitmContext::MitmContext(TlsConfig config, std::vector<InjectRule> rules)
    : config_(std::move(config)), rules_(std::move(rules)), upstream_(ssl::context::tls_client) {}

Result<PemCertificateAndKey> MitmContext::MintCa(const std::vector<InjectRule>& rules,
                                                 const std::string& run_id) {
  std::vector<std::string> hosts;
  for (const InjectRule& rule : rules) hosts.insert(hosts.end(), rule.hosts.begin(), rule.hosts.end());
  auto ca = MintRunCa(hosts, run_id);
  if (!ca) return ca.error().Context("network.inject: the run's CA");
  return ca;
}

Result<std::unique_ptr<MitmContext>> MitmContext::Create(TlsConfig config,
                                                         std::vector<InjectRule> rules,
                                                         PemCertificateAndKey ca) {
  std::unique_ptr<MitmContext> context(new MitmContext(std::move(config), std::move(rules)));
  context->ca_cert_pem_ = std::move(ca.cert_pem);
  context->ca_key_pem_ = Secret(ca.key_pem);
  WipeString(ca.key_pem);
  SSL_CTX* upstream = context->upstream_.native_handle();
  if (SSL_CTX_set_min_proto_version(upstream, TLS1_2_VERSION) != 1) {
    return TlsSetupError("upstream: minimum TLS 1.2");
  }
  SBX_TRY(AddHostTrustStore(SSL_CTX_get_cert_store(upstream)));
  for (const std::string& pem : context->config_.upstream_ca_pems) {
    SBX_TRY(AddCertificates(SSL_CTX_get_cert_store(upstream), pem));
  }
  SSL_CTX_set_verify(upstream, SSL_VERIFY_PEER, nullptr);
  if (SSL_CTX_set_alpn_protos(upstream, kAlpnHttp11, sizeof(kAlpnHttp11)) != 0) {
    return TlsSetupError("upstream: ALPN");
  }
  return context;
}

bool MitmContext::Intercepts(std::string_view name, uint16_t port) const {
  if (port != 443) return false;
  auto normalized = NormalizeHostName(name);
  if (!normalized) return false;
  return std::any_of(rules_.begin(), rules_.end(), [&](const InjectRule& rule) {
    return std::find(rule.hosts.begin(), rule.hosts.end(), *normalized) != rule.hosts.end();
  });
}

Result<ssl::context*> MitmContext::ServerContext(const std::string& host) {
  if (auto found = servers_.find(host); found != servers_.end()) return found->second.get();
  PemCertificateAndKey ca{ca_cert_pem_, std::string(ca_key_pem_.view())};
  auto leaf = MintLeaf(ca, host);
  WipeString(ca.key_pem);
  if (!leaf) return leaf.error();
  auto server = std::make_unique<ssl::context>(ssl::context::tls_server);
  SSL_CTX* native = server->native_handle();
  boost::system::error_code ec;
  server->use_certificate(boost::asio::buffer(leaf->cert_pem), ssl::context::pem, ec);
  if (!ec) server->use_private_key(boost::asio::buffer(leaf->key_pem), ssl::context::pem, ec);
  WipeString(leaf->key_pem);
  if (ec) return MakeError(ErrorCode::kInternal, "tls: load the leaf for " + host + ": " + ec.message());
  if (SSL_CTX_set_min_proto_version(native, TLS1_2_VERSION) != 1) {
    return TlsSetupError("server: minimum TLS 1.2");
  }
  SSL_CTX_set_alpn_select_cb(native, SelectHttp11, nullptr);
  return servers_.emplace(host, std::move(server)).first->second.get();
}

}  // namespace sbx::netd
