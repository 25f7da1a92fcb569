// The runner's preparations for secret injection and extra CAs; what and why in network_trust.h.
#include "sandbox/net/network_trust.h"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "base/small_file.h"
#include "base/wipe.h"
#include "netpolicy/netd_protocol.h"
#include "sandbox/fs/fs_beneath.h"
#include "sandbox/net/pem_text.h"

namespace sbx {
namespace {

constexpr size_t kMaxSecretBytes = 8 * 1024;
constexpr size_t kMaxImageBundleBytes = 4 << 20;

// The variables TLS clients read for their trust bundle: OpenSSL (Python's ssl, curl's
// OpenSSL build), requests and pip (which carry certifi's bundle otherwise), curl, Node.
constexpr const char* kBundleVariables[] = {"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
                                            "PIP_CERT", "NODE_EXTRA_CA_CERTS"};

Result<std::string> ReadCaFile(const std::string& field, const std::string& path) {
  auto text = ReadSmallFile(path, kNetdMaxCaFileBytes + 1);
  if (!text) return text.error().Context(field);
  if (text->size() > kNetdMaxCaFileBytes) {
    return InvalidInput(field + ": " + path + ": larger than " +
                        std::to_string(kNetdMaxCaFileBytes >> 20) +
                        " MiB (sbx-netd's bound for one CA file); name a smaller bundle");
  }
  if (!HasPemCertificate(*text)) {
    return InvalidInput(field + ": " + path +
                        ": no PEM certificate in it (-----BEGIN CERTIFICATE-----)");
  }
  if (text->back() != '\n') text->push_back('\n');
  return text;
}

// One text per file, in the policy's order (sbx-netd names a bad one by its index).
Result<std::vector<std::string>> ReadCaFiles(const std::string& field,
                                             const std::vector<std::string>& paths) {
  std::vector<std::string> pems;
  for (size_t i = 0; i < paths.size(); ++i) {
    SBX_ASSIGN_OR_RETURN(auto pem, ReadCaFile(field + "[" + std::to_string(i) + "]", paths[i]));
    pems.push_back(std::move(pem));
  }
  return pems;
}

// The secret's value is never part of an error: only where it was looked for.
Result<std::string> ReadSecret(const std::string& field, const std::string& source) {
  std::string secret;
  if (source.rfind("env:", 0) == 0) {
    const char* value = std::getenv(source.c_str() + 4);
    if (value == nullptr || value[0] == '\0') {
      return InvalidInput(field + ": " + source.substr(4) +
                          " is not set (or empty) in sbx's environment; export it before "
                          "starting sbx");
    }
    secret = value;
  } else {
    const std::string path = source.substr(5);
    struct stat info {};
    if (::stat(path.c_str(), &info) != 0 || !S_ISREG(info.st_mode)) {
      // A FIFO or a device would block sbx or never end; a secret lives in a regular file.
      return InvalidInput(field + ": " + path + " is not a readable regular file");
    }
    auto text = ReadSmallFile(path, kMaxSecretBytes + 2);
    if (!text) return text.error().Context(field);
    secret = std::move(*text);
    // Files written by editors and `echo` end in a newline that is not part of the secret.
    if (!secret.empty() && secret.back() == '\n') secret.pop_back();
    if (!secret.empty() && secret.back() == '\r') secret.pop_back();
    if (secret.empty()) return InvalidInput(field + ": " + path + " is empty");
  }
  // Printable ASCII only: a header value carries nothing else safely, and no JSON or HTTP
  // parser on the way can then quote a stray byte of it in an error.
  bool printable = secret.size() <= kMaxSecretBytes;
  for (unsigned char c : secret) printable = printable && c >= 0x20 && c < 0x7f;
  if (!printable) {
    WipeString(secret);
    return InvalidInput(field + ": the secret has a control or non-ASCII character (a line "
                        "break?) or is longer than 8 KiB; it must fit in one header line");
  }
  return secret;
}

// "sbx-ph-" and 128 random bits: what an SDK in the sandbox sees instead of the key.
Result<std::string> NewPlaceholder() {
  unsigned char bytes[16];
  if (::getrandom(bytes, sizeof(bytes), 0) != sizeof(bytes)) {
    return SysError(ErrorCode::kSetupFailed, "getrandom (secret placeholder)");
  }
  std::string text = "sbx-ph-";
  char hex[3];
  for (unsigned char byte : bytes) {
    std::snprintf(hex, sizeof(hex), "%02x", byte);
    text += hex;
  }
  return text;
}

// A JSON string literal without the library, so no copy of a secret is left in a temporary:
// secrets are checked to be printable and PEM has only '\n' besides printable ASCII.
void AppendJsonString(std::string& out, const std::string& text) {
  out += '"';
  for (char c : text) {
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  out += '"';
}

Result<std::string> ImageBundle(int image_fd) {
  const std::string relative = std::string(kSandboxCaBundlePath).substr(1);
  auto fd = OpenBeneath(image_fd, relative, O_RDONLY);
  if (!fd) {
    return InvalidInput(std::string("network: the image has no regular file ") +
                        kSandboxCaBundlePath +
                        " for the run's CA to join (install ca-certificates in the image)");
  }
  auto text = ReadSmallFile("/proc/self/fd/" + std::to_string(fd->get()), kMaxImageBundleBytes + 1);
  if (!text) return text.error().Context("network: the image's CA bundle");
  if (text->size() > kMaxImageBundleBytes) {
    return InvalidInput(std::string("network: the image's ") + kSandboxCaBundlePath +
                        " is larger than 4 MiB; a cut bundle would end in half a certificate");
  }
  if (!text->empty() && text->back() != '\n') text->push_back('\n');
  return text;
}

}  // namespace

NetworkTrust::NetworkTrust(NetworkTrust&& other) noexcept { *this = std::move(other); }

NetworkTrust& NetworkTrust::operator=(NetworkTrust&& other) noexcept {
  if (this != &other) {
    WipeString(netd_tls_json_);
    sandbox_bundle_ = std::move(other.sandbox_bundle_);
    sandbox_env_ = std::move(other.sandbox_env_);
    netd_ca_pems_ = std::move(other.netd_ca_pems_);
    netd_tls_json_ = std::move(other.netd_tls_json_);
    other.netd_tls_json_.clear();
  }
  return *this;
}

NetworkTrust::~NetworkTrust() { WipeString(netd_tls_json_); }

void NetworkTrust::ForgetNetdTlsJson() { WipeString(netd_tls_json_); }

void NetworkTrust::AddRunCa(const std::string& cert_pem) {
  sandbox_bundle_ += cert_pem;
  if (!cert_pem.empty() && cert_pem.back() != '\n') sandbox_bundle_ += '\n';
}

Result<NetworkTrust> PrepareNetworkTrust(const NetworkAllowlist& allowlist, int image_fd) {
  NetworkTrust trust;
  if (allowlist.inject.empty() && allowlist.extra_ca_files.empty()) return trust;

  auto bundle = ImageBundle(image_fd);
  if (!bundle) return bundle.error();
  auto extra = ReadCaFiles("network.extra_ca_files", allowlist.extra_ca_files);
  if (!extra) return extra.error();
  trust.sandbox_bundle_ = *bundle;
  for (const std::string& pem : *extra) trust.sandbox_bundle_ += pem;
  trust.netd_ca_pems_ = std::move(*extra);
  for (const char* name : kBundleVariables) trust.sandbox_env_[name] = kSandboxCaBundlePath;
  if (allowlist.inject.empty()) return trust;

  auto upstream = ReadCaFiles("network.upstream_ca_files", allowlist.upstream_ca_files);
  if (!upstream) return upstream.error();
  for (std::string& pem : *upstream) trust.netd_ca_pems_.push_back(std::move(pem));

  // Reserved up front: a growing string would leave copies of secrets in freed memory.
  std::string secrets;
  secrets.reserve(allowlist.inject.size() * (2 * kMaxSecretBytes + 512) + 2);
  secrets += "[";
  for (size_t i = 0; i < allowlist.inject.size(); ++i) {
    const InjectRule& rule = allowlist.inject[i];
    auto secret = ReadSecret("network.inject[" + std::to_string(i) + "].secret_from", rule.secret_from);
    if (!secret) {
      WipeString(secrets);
      return secret.error();
    }
    std::string value = rule.format;
    value.replace(value.find("{secret}"), 8, *secret);
    WipeString(*secret);
    std::string placeholder;
    if (!rule.sandbox_placeholder_env.empty()) {
      auto made = NewPlaceholder();
      if (!made) {
        WipeString(value);
        WipeString(secrets);
        return made.error();
      }
      placeholder = *made;
      trust.sandbox_env_[rule.sandbox_placeholder_env] = placeholder;
    }
    secrets += i == 0 ? "{\"value\":" : ",{\"value\":";
    AppendJsonString(secrets, value);
    WipeString(value);
    secrets += ",\"placeholder\":";
    AppendJsonString(secrets, placeholder);
    secrets += "}";
  }
  secrets += "]";

  std::string tls;
  tls.reserve(secrets.size() + 16);
  tls += "{\"secrets\":";
  tls += secrets;
  tls += "}";
  WipeString(secrets);
  trust.netd_tls_json_ = std::move(tls);
  return trust;
}

}  // namespace sbx
