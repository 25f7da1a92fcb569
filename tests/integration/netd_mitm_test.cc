// Secret injection end to end through the real sbx-netd binary: the test plays the runner
// (control socket, "tls" message), the sandbox (sockets in a network namespace with the local
// default route, a TLS client trusting only the run CA) and the internet (a TLS server on
// 127.0.0.1:443 with a certificate from a test CA). Everything runs in a network namespace of
// its own, so port 443 is the test's and nothing reaches the host's network.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <sched.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/fd_passing.h"
#include "base/unique_fd.h"
#include "netpolicy/netd_protocol.h"
#include "netpolicy/network_allowlist_json.h"
#include "sandbox/policy/policy.h"
#include "src/netd/tls_ca.h"

namespace sbx {
namespace {

using netd::MintLeaf;
using netd::MintRunCa;
using netd::PemCertificateAndKey;

using nlohmann::json;

constexpr char kSecret[] = "Bearer sk-test-0f9e8d7c6b5a";
constexpr char kPlaceholder[] = "sbx-ph-00112233445566778899aabbccddeeff";
constexpr char kLiteral[] = "203.0.113.7";  // an IP literal; the SNI / Host names the host

SSL_CTX* ContextWith(const PemCertificateAndKey& identity, bool server) {
  SSL_CTX* context = SSL_CTX_new(server ? TLS_server_method() : TLS_client_method());
  if (server) {
    BIO* cert = BIO_new_mem_buf(identity.cert_pem.data(), -1);
    BIO* key = BIO_new_mem_buf(identity.key_pem.data(), -1);
    X509* x509 = PEM_read_bio_X509(cert, nullptr, nullptr, nullptr);
    EVP_PKEY* pkey = PEM_read_bio_PrivateKey(key, nullptr, nullptr, nullptr);
    EXPECT_EQ(SSL_CTX_use_certificate(context, x509), 1);
    EXPECT_EQ(SSL_CTX_use_PrivateKey(context, pkey), 1);
    X509_free(x509);
    EVP_PKEY_free(pkey);
    BIO_free(cert);
    BIO_free(key);
  } else {
    BIO* cert = BIO_new_mem_buf(identity.cert_pem.data(), -1);
    X509* ca = PEM_read_bio_X509(cert, nullptr, nullptr, nullptr);
    X509_STORE_add_cert(SSL_CTX_get_cert_store(context), ca);
    X509_free(ca);
    BIO_free(cert);
    SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nullptr);
  }
  return context;
}

// Reads one HTTP/1.1 message head and its Content-Length body from `ssl`; "" at end of stream.
std::string ReadMessage(SSL* ssl) {
  std::string data;
  char byte;
  while (data.find("\r\n\r\n") == std::string::npos) {
    if (SSL_read(ssl, &byte, 1) != 1) return data;
    data.push_back(byte);
  }
  size_t length = 0;
  std::istringstream head(data);
  for (std::string line; std::getline(head, line);) {
    if (strncasecmp(line.c_str(), "content-length:", 15) == 0) length = std::stoul(line.substr(15));
  }
  std::string body(length, '\0');
  size_t got = 0;
  while (got < length) {
    const int n = SSL_read(ssl, body.data() + got, static_cast<int>(length - got));
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  return data + body.substr(0, got);
}

UniqueFd ListenOnLoopback(uint16_t port) {
  UniqueFd listener(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(bind(listener.get(), reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  EXPECT_EQ(listen(listener.get(), 16), 0);
  return listener;
}

// The "internet": TLS on 127.0.0.1:443 with `identity`; answers every request "200 ok" on a
// kept-alive connection and records each request's head and body.
class TlsUpstream {
 public:
  explicit TlsUpstream(const PemCertificateAndKey& identity)
      : context_(ContextWith(identity, true)), listener_(ListenOnLoopback(443)) {
    thread_ = std::thread([this] { Serve(); });
  }
  ~TlsUpstream() {
    shutdown(listener_.get(), SHUT_RDWR);
    thread_.join();
    SSL_CTX_free(context_);
  }
  int connections() const { return connections_; }
  std::vector<std::string> requests() {
    std::lock_guard lock(mutex_);
    return requests_;
  }

 private:
  void Serve() {
    while (true) {
      UniqueFd client(accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
      if (!client) return;
      ++connections_;
      SSL* ssl = SSL_new(context_);
      SSL_set_fd(ssl, client.get());
      if (SSL_accept(ssl) == 1) {
        while (true) {
          const std::string request = ReadMessage(ssl);
          if (request.empty()) break;
          {
            std::lock_guard lock(mutex_);
            requests_.push_back(request);
          }
          const std::string reply = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
          SSL_write(ssl, reply.data(), static_cast<int>(reply.size()));
        }
      }
      SSL_free(ssl);
      ERR_clear_error();
    }
  }

  SSL_CTX* context_;
  UniqueFd listener_;
  std::thread thread_;
  std::atomic<int> connections_{0};
  std::mutex mutex_;
  std::vector<std::string> requests_;
};

// A plain TCP listener on 127.0.0.1:80 that only counts connections.
class CountingListener {
 public:
  CountingListener() : listener_(ListenOnLoopback(80)) {
    thread_ = std::thread([this] {
      while (UniqueFd(accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC))) ++connections_;
    });
  }
  ~CountingListener() {
    shutdown(listener_.get(), SHUT_RDWR);
    thread_.join();
  }
  int connections() const { return connections_; }

 private:
  UniqueFd listener_;
  std::thread thread_;
  std::atomic<int> connections_{0};
};

// Sockets of the "sandbox": listeners on [::]:443 and [::]:80 (netd's capture sockets) and
// unconnected clients, in a fresh network namespace with lo up and the local default route.
// Made on a thread of its own: network namespaces belong to threads.
struct SandboxSockets {
  UniqueFd tcp443, tcp80;
  std::vector<UniqueFd> clients;
};

bool MakeSandboxSockets(SandboxSockets& out) {
  bool ok = false;
  std::thread([&] {
    if (unshare(CLONE_NEWNET) != 0) return;
    if (system("/usr/sbin/ip link set lo up && /usr/sbin/ip route add local 0.0.0.0/0 dev lo table local") != 0) {
      return;
    }
    auto listen_on = [](uint16_t port) {
      UniqueFd fd(socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0));
      const int zero = 0;
      setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
      sockaddr_in6 address{};
      address.sin6_family = AF_INET6;
      address.sin6_port = htons(port);
      if (bind(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
          listen(fd.get(), 16) != 0) {
        return UniqueFd();
      }
      return fd;
    };
    out.tcp443 = listen_on(443);
    out.tcp80 = listen_on(80);
    for (int i = 0; i < 6; ++i) out.clients.emplace_back(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    ok = out.tcp443 && out.tcp80;
  }).join();
  return ok;
}

int ConnectTo(int fd, uint16_t port) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  inet_pton(AF_INET, kLiteral, &address.sin_addr);
  timeval timeout{20, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  return connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address));
}

// The sandbox's TLS client: trusts only `ca`, SNI and host check for "localhost".
class SandboxTlsClient {
 public:
  SandboxTlsClient(int fd, const PemCertificateAndKey& ca) : context_(ContextWith(ca, false)) {
    connected_ = ConnectTo(fd, 443) == 0;
    ssl_ = SSL_new(context_);
    SSL_set_fd(ssl_, fd);
    SSL_set_tlsext_host_name(ssl_, "localhost");
    SSL_set1_host(ssl_, "localhost");
    handshake_ok_ = connected_ && SSL_connect(ssl_) == 1;
  }
  ~SandboxTlsClient() {
    SSL_free(ssl_);
    SSL_CTX_free(context_);
  }
  bool handshake_ok() const { return handshake_ok_; }
  std::string Ask(const std::string& request) {
    SSL_write(ssl_, request.data(), static_cast<int>(request.size()));
    return ReadMessage(ssl_);
  }

 private:
  SSL_CTX* context_;
  SSL* ssl_ = nullptr;
  bool connected_ = false;
  bool handshake_ok_ = false;
};

class NetdMitmTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root to create the test's network namespaces";
    // OpenSSL writes with write(2): a peer that reset must be an error here, not SIGPIPE.
    signal(SIGPIPE, SIG_IGN);
    // This thread moves into a namespace of its own ("the host" for netd and the upstream);
    // TearDown moves it back.
    original_netns_ = UniqueFd(open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC));
    ASSERT_TRUE(original_netns_);
    ASSERT_EQ(unshare(CLONE_NEWNET), 0);
    ASSERT_EQ(system("/usr/sbin/ip link set lo up"), 0);
    log_path_ = ::testing::TempDir() + "netd-mitm-" + std::to_string(getpid()) + ".jsonl";
    unlink(log_path_.c_str());
    log_ = UniqueFd(open(log_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
    ASSERT_TRUE(log_);
    auto upstream_ca = MintRunCa({"localhost"}, "upstream-test-ca");
    ASSERT_TRUE(upstream_ca);
    upstream_ca_ = *upstream_ca;
    ASSERT_TRUE(MakeSandboxSockets(sandbox_));
  }
  void TearDown() override {
    if (netd_pid_ > 0) {
      kill(netd_pid_, SIGKILL);
      waitpid(netd_pid_, nullptr, 0);
    }
    if (original_netns_) {
      EXPECT_EQ(setns(original_netns_.get(), CLONE_NEWNET), 0);
    }
    if (!log_path_.empty()) unlink(log_path_.c_str());
  }

  // Starts sbx-netd as the runner does, with one inject rule for localhost, and hands it the
  // sandbox's listeners. upstream_ca_pem: what netd trusts besides the host's store. netd
  // mints the run's CA; its certificate (run_ca_) comes in its own message before "ready".
  void StartNetd(const std::string& upstream_ca_pem) {
    NetworkAllowlist allowlist;
    allowlist.allow = {*ParseNetworkRule("localhost:80,443", "allow")};
    allowlist.allow_private = {*ParseNetworkRule("127.0.0.0/8:80,443", "allow_private")};
    allowlist.upstream_ca_files = {"/test/upstream-ca.pem"};
    json network = json::parse(NetworkAllowlistToJson(allowlist));
    network["inject"] = {{{"name", "api"},
                          {"hosts", {"localhost"}},
                          {"header", "Authorization"},
                          {"format", "Bearer {secret}"},
                          {"secret_from", "env:API_KEY"},
                          {"sandbox_placeholder_env", "API_KEY"}}};
    json hello = {{"v", 1},
                  {"run", "run-mitm"},
                  {"audit_log", true},
                  {"network", network},
                  {"ca_file_sizes", {upstream_ca_pem.size()}},
                  {"tls", {{"secrets", {{{"value", kSecret}, {"placeholder", kPlaceholder}}}}}}};
    // The upstream CA travels as the runner sends it: in a memfd handed over with the hello.
    UniqueFd ca_files(memfd_create("upstream-ca", MFD_CLOEXEC));
    ASSERT_TRUE(ca_files);
    ASSERT_EQ(write(ca_files.get(), upstream_ca_pem.data(), upstream_ca_pem.size()),
              static_cast<ssize_t>(upstream_ca_pem.size()));
    int pair[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair), 0);
    control_ = UniqueFd(pair[0]);
    UniqueFd child_end(pair[1]);
    netd_pid_ = fork();
    ASSERT_GE(netd_pid_, 0);
    if (netd_pid_ == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      // Above 4 first: either fd may be 3 or 4 already. dup2 clears FD_CLOEXEC on the copy.
      const int control = fcntl(child_end.get(), F_DUPFD_CLOEXEC, 10);
      const int log = fcntl(log_.get(), F_DUPFD_CLOEXEC, 10);
      dup2(control, kNetdControlFd);
      dup2(log, kNetdAuditLogFd);
      const char* const argv[] = {"sbx-netd", nullptr};
      const char* const envp[] = {nullptr};
      execve(SBX_NETD_BINARY, const_cast<char* const*>(argv), const_cast<char* const*>(envp));
      _exit(127);
    }
    child_end.reset();
    SendWithFds(hello.dump(), {ca_files.get()});
    const json ca = json::parse(Receive(), nullptr, false);
    ASSERT_TRUE(ca.is_object() && ca.contains("ca_cert_pem")) << ca.dump();
    EXPECT_EQ(ca.size(), 1u) << "the certificate only: the run CA's key stays in netd";
    run_ca_.cert_pem = ca["ca_cert_pem"].get<std::string>();
    ASSERT_EQ(Receive(), R"({"ready":true})");
    const json capture = {{"capture", {{{"proto", "tcp"}, {"port", 443}}, {{"proto", "tcp"}, {"port", 80}}}},
                          {"last", true}};
    SendWithFds(capture.dump(), {sandbox_.tcp443.get(), sandbox_.tcp80.get()});
    ASSERT_EQ(Receive(), R"({"serving":true})");
  }

  // Stops netd (the summary says it ended in order) and returns the audit log's text.
  std::string StopNetd() {
    Send(R"({"stop":true})");
    EXPECT_NE(Receive().find("\"summary\""), std::string::npos);
    int status = 0;
    waitpid(netd_pid_, &status, 0);
    netd_pid_ = -1;
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "netd status " << status;
    std::ifstream file(log_path_);
    return std::string(std::istreambuf_iterator<char>(file), {});
  }

  static std::vector<json> Records(const std::string& log, const std::string& ev) {
    std::vector<json> records;
    std::istringstream lines(log);
    for (std::string line; std::getline(lines, line);) {
      json record = json::parse(line);
      if (record["ev"] == ev) records.push_back(record);
    }
    return records;
  }

  // One datagram with `fds` attached (SCM_RIGHTS).
  void SendWithFds(const std::string& text, const std::vector<int>& fds) {
    ASSERT_EQ(sbx::SendWithFds(control_.get(), text.data(), text.size(), fds.data(), fds.size()),
              static_cast<ssize_t>(text.size()));
  }

  void Send(const std::string& text) {
    ASSERT_EQ(send(control_.get(), text.data(), text.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(text.size()));
  }
  std::string Receive() {
    char buffer[4096];
    timeval timeout{20, 0};
    setsockopt(control_.get(), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
    const ssize_t got = recv(control_.get(), buffer, sizeof(buffer), 0);
    return got > 0 ? std::string(buffer, static_cast<size_t>(got)) : "";
  }

  UniqueFd original_netns_;
  std::string log_path_;
  UniqueFd log_;
  UniqueFd control_;
  pid_t netd_pid_ = -1;
  PemCertificateAndKey run_ca_, upstream_ca_;
  SandboxSockets sandbox_;
};

TEST_F(NetdMitmTest, InjectsTheSecretReplacingTheClientsHeaderOnEveryRequest) {
  auto leaf = MintLeaf(upstream_ca_, "localhost");
  ASSERT_TRUE(leaf);
  TlsUpstream upstream(*leaf);
  StartNetd(upstream_ca_.cert_pem);
  {
    SandboxTlsClient client(sandbox_.clients[0].get(), run_ca_);
    ASSERT_TRUE(client.handshake_ok()) << "the sandbox does not accept netd's leaf";
    const std::string first = client.Ask(
        std::string("POST /v1/chat?api_key=q HTTP/1.1\r\nHost: localhost\r\n") +
        "Authorization: Bearer " + kPlaceholder + "\r\nauthorization: other\r\n" +
        "X-Trace: keep\r\nContent-Length: 5\r\n\r\nhello");
    EXPECT_EQ(first.substr(0, 15), "HTTP/1.1 200 OK");
    const std::string second = client.Ask("GET /v2 HTTP/1.1\r\nHost: localhost:443\r\n\r\n");
    EXPECT_EQ(second.substr(0, 15), "HTTP/1.1 200 OK");
  }
  const auto requests = upstream.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(upstream.connections(), 1) << "both requests on one kept-alive connection";
  for (const std::string& request : requests) {
    EXPECT_NE(request.find(std::string("Authorization: ") + kSecret + "\r\n"), std::string::npos)
        << request;
    EXPECT_EQ(request.find(kPlaceholder), std::string::npos) << request;
    EXPECT_EQ(request.find("other"), std::string::npos) << request;
  }
  EXPECT_NE(requests[0].find("X-Trace: keep"), std::string::npos);
  EXPECT_NE(requests[0].find("\r\n\r\nhello"), std::string::npos) << "the body is forwarded";
  const std::string log = StopNetd();
  EXPECT_EQ(log.find("sk-test"), std::string::npos) << "the secret is in the audit log";
  EXPECT_EQ(log.find(kPlaceholder), std::string::npos);
  EXPECT_EQ(log.find("api_key"), std::string::npos) << "a query string is in the log";
  const auto http = Records(log, "http");
  ASSERT_EQ(http.size(), 2u) << log;
  EXPECT_EQ(http[0]["name"], "localhost");
  EXPECT_EQ(http[0]["method"], "POST");
  EXPECT_EQ(http[0]["path"], "/v1/chat");
  EXPECT_EQ(http[0]["status"], 200);
  EXPECT_EQ(http[0]["inject"], json::array({"api"}));
  EXPECT_EQ(http[0]["decision"], "allow");
  EXPECT_EQ(http[1]["path"], "/v2");
  const auto conns = Records(log, "conn");
  ASSERT_EQ(conns.size(), 1u) << log;
  EXPECT_EQ(conns[0]["decision"], "allow");
  EXPECT_EQ(conns[0]["mitm"], true);
  EXPECT_EQ(conns[0]["upstream"], "127.0.0.1:443");
  EXPECT_GT(conns[0]["bytes_up"].get<uint64_t>(), 0u);
}

TEST_F(NetdMitmTest, AnUpstreamCertificateFromAnUntrustedCaGets502AndNoRequest) {
  auto stranger = MintRunCa({"localhost"}, "stranger");
  ASSERT_TRUE(stranger);
  auto leaf = MintLeaf(*stranger, "localhost");
  ASSERT_TRUE(leaf);
  TlsUpstream upstream(*leaf);
  StartNetd(upstream_ca_.cert_pem);
  {
    SandboxTlsClient client(sandbox_.clients[0].get(), run_ca_);
    ASSERT_TRUE(client.handshake_ok());
    const std::string answer = client.Ask(
        "GET / HTTP/1.1\r\nHost: localhost\r\nAuthorization: x\r\n\r\n");
    EXPECT_EQ(answer.substr(0, 24), "HTTP/1.1 502 Bad Gateway") << answer;
    EXPECT_NE(answer.find("upstream certificate verification failed for localhost"),
              std::string::npos)
        << answer;
  }
  EXPECT_EQ(upstream.connections(), 1) << "netd did try the upstream";
  EXPECT_TRUE(upstream.requests().empty()) << "a request reached an unverified upstream";
  const std::string log = StopNetd();
  const auto conns = Records(log, "conn");
  ASSERT_EQ(conns.size(), 1u) << log;
  EXPECT_EQ(conns[0]["decision"], "deny");
  EXPECT_EQ(conns[0]["reason"], "tls_verify_failed");
  EXPECT_EQ(conns[0]["mitm"], true);
  EXPECT_EQ(log.find("sk-test"), std::string::npos);
}

TEST_F(NetdMitmTest, AnotherHostInsideTheTlsGets403) {
  auto leaf = MintLeaf(upstream_ca_, "localhost");
  ASSERT_TRUE(leaf);
  TlsUpstream upstream(*leaf);
  StartNetd(upstream_ca_.cert_pem);
  {
    SandboxTlsClient client(sandbox_.clients[0].get(), run_ca_);
    ASSERT_TRUE(client.handshake_ok());
    const std::string answer = client.Ask("GET / HTTP/1.1\r\nHost: evil.test\r\n\r\n");
    EXPECT_EQ(answer.substr(0, 22), "HTTP/1.1 403 Forbidden") << answer;
    EXPECT_NE(answer.find("host_mismatch"), std::string::npos) << answer;
  }
  EXPECT_TRUE(upstream.requests().empty());
  const auto http = Records(StopNetd(), "http");
  ASSERT_EQ(http.size(), 1u);
  EXPECT_EQ(http[0]["status"], 403);
  EXPECT_EQ(http[0]["decision"], "deny");
  EXPECT_EQ(http[0]["reason"], "host_mismatch");
}

TEST_F(NetdMitmTest, APlaceholderInPlainHttpGets403AndNeverLeaves) {
  CountingListener plain_upstream;
  auto leaf = MintLeaf(upstream_ca_, "localhost");
  ASSERT_TRUE(leaf);
  TlsUpstream upstream(*leaf);
  StartNetd(upstream_ca_.cert_pem);
  const int fd = sandbox_.clients[0].get();
  ASSERT_EQ(ConnectTo(fd, 80), 0);
  const std::string request = std::string("GET / HTTP/1.1\r\nHost: localhost\r\nX-Key: ") +
                              kPlaceholder + "\r\n\r\n";
  ASSERT_EQ(send(fd, request.data(), request.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(request.size()));
  std::string answer(4096, '\0');
  const ssize_t got = recv(fd, answer.data(), answer.size(), 0);
  answer.resize(got > 0 ? static_cast<size_t>(got) : 0);
  EXPECT_EQ(answer.substr(0, 22), "HTTP/1.1 403 Forbidden") << answer;
  EXPECT_NE(answer.find("placeholder_leak"), std::string::npos) << answer;
  // The same head without the placeholder is let through (the listener counts it).
  const int clean = sandbox_.clients[1].get();
  ASSERT_EQ(ConnectTo(clean, 80), 0);
  const std::string clean_request = "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n";
  ASSERT_EQ(send(clean, clean_request.data(), clean_request.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(clean_request.size()));
  for (int i = 0; i < 100 && plain_upstream.connections() == 0; ++i) usleep(20000);
  EXPECT_EQ(plain_upstream.connections(), 1) << "only the clean request reached the upstream";
  const std::string log = StopNetd();
  const auto conns = Records(log, "conn");
  ASSERT_GE(conns.size(), 1u);
  EXPECT_EQ(conns[0]["reason"], "placeholder_leak");
  EXPECT_EQ(conns[0]["rule"], "inject[0]");
  EXPECT_EQ(log.find(kPlaceholder), std::string::npos);
}

}  // namespace
}  // namespace sbx
