// What sbx-netd needs to terminate the sandbox's TLS towards an inject host and to speak TLS to the
// real server (docs/network.md, TLS termination): the run CA (minted here; only its certificate
// leaves netd, for the sandbox's trust bundle), one server context per inject host (its leaf minted
// on first use, then cached), the upstream client context, the inject rules and their secrets.
// Exists only when the policy has inject rules; one per netd process.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/ssl/context.hpp>

#include "base/error.h"
#include "netpolicy/network_rules.h"
#include "src/netd/tls_ca.h"
#include "src/netd/tls_config.h"

namespace sbx::netd {

class MitmContext {
 public:
  // The run's CA for the rules' hosts (tls_ca.h MintRunCa, named after `run_id`). Minted
  // before Create, so its certificate can go to the runner while the contexts are built.
  static Result<PemCertificateAndKey> MintCa(const std::vector<InjectRule>& rules,
                                             const std::string& run_id);
  // Takes `ca` (MintCa; its key is wiped from it); loads the host's default trust store (the
  // file and directory OpenSSL was built with, the slow part) and the upstream CAs (checked
  // by CheckCaFiles) into the upstream context.
  static Result<std::unique_ptr<MitmContext>> Create(TlsConfig config,
                                                     std::vector<InjectRule> rules,
                                                     PemCertificateAndKey ca);

  // True for connections that go through the MITM path: port 443 to a name some inject rule
  // lists (names compared normalized).
  bool Intercepts(std::string_view name, uint16_t port) const;

  // The server context presenting the leaf for `host` (minted now if it is the first time).
  Result<boost::asio::ssl::context*> ServerContext(const std::string& host);
  // Verifies the peer against the host's store plus the upstream CAs; ALPN http/1.1. The
  // caller sets SNI and the expected host name per connection.
  boost::asio::ssl::context& upstream() { return upstream_; }

  const std::vector<InjectRule>& rules() const { return rules_; }
  const std::vector<InjectSecret>& secrets() const { return config_.secrets; }

 private:
  MitmContext(TlsConfig config, std::vector<InjectRule> rules);

  TlsConfig config_;
  std::vector<InjectRule> rules_;
  std::string ca_cert_pem_;
  Secret ca_key_pem_;
  boost::asio::ssl::context upstream_;
  std::map<std::string, std::unique_ptr<boost::asio::ssl::context>, std::less<>> servers_;
};

}  // namespace sbx::netd
