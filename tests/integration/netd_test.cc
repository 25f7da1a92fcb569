// The real sbx-netd binary, started through sandbox/net/netd_process.h, against sockets bound in
// a fresh network namespace with the sandbox's local default route (as the launcher will bind
// them): stub DNS, fake-address connections relayed to an upstream on the host's loopback,
// denials, the audit log, the summary, limits, and the helper's own confinement.
#include "sandbox/net/netd_process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/unique_fd.h"
#include "netpolicy/netd_protocol.h"
#include "src/netd/dns_tcp_session.h"
#include "tests/integration/network_audit.h"

namespace sbx {
namespace {

using nlohmann::json;

NetworkRule Rule(const std::string& text) {
  auto rule = ParseNetworkRule(text, "test");
  EXPECT_TRUE(rule) << text;
  return *rule;
}

// A TCP listener on 127.0.0.1, on a port the kernel picks (stored in *port).
UniqueFd LoopbackListener(int backlog, uint16_t* port) {
  UniqueFd listener(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(bind(listener.get(), reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  EXPECT_EQ(listen(listener.get(), backlog), 0);
  socklen_t length = sizeof(address);
  getsockname(listener.get(), reinterpret_cast<sockaddr*>(&address), &length);
  *port = ntohs(address.sin_port);
  return listener;
}

// A TCP server on 127.0.0.1 (the host side, the "internet" here): for each connection it reads
// until end of stream, answers "echo:" + what it read (or, after set_reply_bytes(n), n bytes of
// 'x'), and closes. After set_greet_first(), it instead sends "hello\n" and shuts down its
// sending side first, then reads until end of stream. Counts connections and bytes received.
class UpstreamServer {
 public:
  UpstreamServer() {
    listener_ = LoopbackListener(16, &port_);
    thread_ = std::thread([this] { Serve(); });
  }
  ~UpstreamServer() {
    shutdown(listener_.get(), SHUT_RDWR);
    thread_.join();
  }
  uint16_t port() const { return port_; }
  int connections() const { return connections_; }
  size_t received_bytes() const { return shared_->received_bytes; }
  // What it has received once `expected` bytes arrived or 5 s passed: its thread reads on its
  // own time, after netd may already have logged the connection as closed.
  size_t received_bytes_after_waiting_for(size_t expected) const {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (shared_->received_bytes < expected && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return shared_->received_bytes;
  }
  void set_reply_bytes(size_t bytes) { shared_->reply_bytes = bytes; }
  void set_greet_first() { shared_->greet_first = true; }

 private:
  void Serve() {
    while (true) {
      UniqueFd client(accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
      if (!client) return;
      ++connections_;
      std::thread([shared = shared_, fd = client.release()] {
        UniqueFd connection(fd);
        if (shared->greet_first) {
          (void)!send(connection.get(), "hello\n", 6, MSG_NOSIGNAL);
          shutdown(connection.get(), SHUT_WR);
        }
        std::string received;
        char buffer[65536];
        ssize_t got;
        while ((got = read(connection.get(), buffer, sizeof(buffer))) > 0) {
          received.append(buffer, static_cast<size_t>(got));
          shared->received_bytes += static_cast<size_t>(got);
        }
        if (shared->greet_first) return;
        const std::string reply =
            shared->reply_bytes > 0 ? std::string(shared->reply_bytes, 'x') : "echo:" + received;
        (void)!send(connection.get(), reply.data(), reply.size(), MSG_NOSIGNAL);
      }).detach();
    }
  }

  UniqueFd listener_;
  uint16_t port_ = 0;
  std::atomic<int> connections_{0};
  // Shared with the connection threads, which may outlive the server.
  struct Shared {
    std::atomic<size_t> received_bytes{0};
    std::atomic<size_t> reply_bytes{0};
    std::atomic<bool> greet_first{false};
  };
  std::shared_ptr<Shared> shared_ = std::make_shared<Shared>();
  std::thread thread_;
};

// What a sandbox's network namespace provides: capture sockets (as the launcher's child binds
// them) and client sockets created inside it, for the test to play the workload.
struct SandboxSockets {
  std::vector<UniqueFd> tcp_listeners;  // one per requested port, [::]:port dual-stack
  UniqueFd udp4;                        // 0.0.0.0:53
  UniqueFd udp6;                        // [::]:53, IPV6_V6ONLY
  std::vector<UniqueFd> tcp_clients;    // AF_INET, unconnected
  UniqueFd udp_client;                  // AF_INET, unconnected
  UniqueFd udp6_client;                 // AF_INET6, unconnected
};

constexpr int kTcpClients = 8;

// In the forked child only (async-signal-safe calls): `ip` configures the namespace.
int RunInChild(const char* const argv[]) {
  const pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    int null = open("/dev/null", O_WRONLY);
    dup2(null, 1);
    dup2(null, 2);
    execv(argv[0], const_cast<char* const*>(argv));
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int BoundSocket(int family, int type, uint16_t port, bool v6only) {
  const int fd = socket(family, type | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  const int one = 1, zero = 0;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (family == AF_INET6) {
    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, v6only ? &one : &zero, sizeof(int));
    sockaddr_in6 address{};
    address.sin6_family = AF_INET6;
    address.sin6_port = htons(port);
    if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) return -1;
  } else {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) return -1;
  }
  if (type == SOCK_STREAM && listen(fd, 64) != 0) return -1;
  return fd;
}

// Forks a child that enters a new network namespace, brings lo up with the local default
// routes (v4 and v6), binds the sockets and sends them back. Needs root (CAP_SYS_ADMIN).
bool MakeSandboxSockets(const std::vector<uint16_t>& tcp_ports, SandboxSockets& out) {
  int pair[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) return false;
  UniqueFd parent_end(pair[0]), child_end(pair[1]);
  static const char* const kLoUp[] = {"/usr/sbin/ip", "link", "set", "lo", "up", nullptr};
  static const char* const kRoute4[] = {"/usr/sbin/ip", "route", "add",   "local", "0.0.0.0/0",
                                        "dev",          "lo",    "table", "local", nullptr};
  static const char* const kRoute6[] = {"/usr/sbin/ip", "-6", "route", "add",   "local", "::/0",
                                        "dev",          "lo", "table", "local", nullptr};
  const size_t count = tcp_ports.size() + 2 + kTcpClients + 2;
  std::vector<char> control(CMSG_SPACE(sizeof(int) * count));
  // One message, filled by the child and read into by the parent, each in its own copy.
  char byte = 0;
  iovec iov{&byte, 1};
  msghdr message{};
  message.msg_iov = &iov;
  message.msg_iovlen = 1;
  message.msg_control = control.data();
  message.msg_controllen = control.size();
  const pid_t pid = fork();
  if (pid < 0) return false;
  if (pid == 0) {
    if (unshare(CLONE_NEWNET) != 0 || RunInChild(kLoUp) != 0 || RunInChild(kRoute4) != 0 ||
        RunInChild(kRoute6) != 0) {
      _exit(1);
    }
    int fds[64];
    size_t n = 0;
    for (uint16_t port : tcp_ports) fds[n++] = BoundSocket(AF_INET6, SOCK_STREAM, port, false);
    fds[n++] = BoundSocket(AF_INET, SOCK_DGRAM, 53, false);
    fds[n++] = BoundSocket(AF_INET6, SOCK_DGRAM, 53, true);
    for (int i = 0; i < kTcpClients; ++i) fds[n++] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    fds[n++] = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    fds[n++] = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    for (size_t i = 0; i < n; ++i) {
      if (fds[i] < 0) _exit(2);
    }
    cmsghdr* cmsg = CMSG_FIRSTHDR(&message);
    cmsg->cmsg_level = SOL_SOCKET;
    cmsg->cmsg_type = SCM_RIGHTS;
    cmsg->cmsg_len = CMSG_LEN(sizeof(int) * n);
    std::memcpy(CMSG_DATA(cmsg), fds, sizeof(int) * n);
    _exit(sendmsg(child_end.get(), &message, 0) == 1 ? 0 : 3);
  }
  child_end.reset();
  const ssize_t got = recvmsg(parent_end.get(), &message, MSG_CMSG_CLOEXEC);
  int status = 0;
  waitpid(pid, &status, 0);
  cmsghdr* cmsg = CMSG_FIRSTHDR(&message);
  if (got != 1 || cmsg == nullptr || cmsg->cmsg_len != CMSG_LEN(sizeof(int) * count)) return false;
  std::vector<int> fds(count);
  std::memcpy(fds.data(), CMSG_DATA(cmsg), sizeof(int) * count);
  size_t at = 0;
  for (size_t i = 0; i < tcp_ports.size(); ++i) out.tcp_listeners.emplace_back(fds[at++]);
  out.udp4 = UniqueFd(fds[at++]);
  out.udp6 = UniqueFd(fds[at++]);
  for (int i = 0; i < kTcpClients; ++i) out.tcp_clients.emplace_back(fds[at++]);
  out.udp_client = UniqueFd(fds[at++]);
  out.udp6_client = UniqueFd(fds[at++]);
  return true;
}

// One DNS query from the sandbox's side to `server`:53; the answer's bytes. The answer must
// come from the address asked (netd replies with the query's destination as its source).
// A query for `name` (type `qtype`, class IN) with id `id`, recursion desired.
std::vector<uint8_t> DnsQuery(const std::string& name, uint16_t qtype, uint16_t id) {
  std::vector<uint8_t> query = {
      static_cast<uint8_t>(id >> 8), static_cast<uint8_t>(id), 0x01, 0, 0, 1, 0, 0, 0, 0, 0, 0};
  std::stringstream labels(name);
  std::string label;
  while (std::getline(labels, label, '.')) {
    query.push_back(static_cast<uint8_t>(label.size()));
    query.insert(query.end(), label.begin(), label.end());
  }
  query.insert(query.end(),
               {0, static_cast<uint8_t>(qtype >> 8), static_cast<uint8_t>(qtype), 0, 1});
  return query;
}

std::vector<uint8_t> AskDns(int udp, const std::string& name, uint16_t qtype, uint16_t id,
                            const std::string& server = "127.0.0.1") {
  const std::vector<uint8_t> query = DnsQuery(name, qtype, id);
  sockaddr_storage to{};
  socklen_t to_length;
  if (server.find(':') != std::string::npos) {
    auto* in6 = reinterpret_cast<sockaddr_in6*>(&to);
    in6->sin6_family = AF_INET6;
    in6->sin6_port = htons(53);
    inet_pton(AF_INET6, server.c_str(), &in6->sin6_addr);
    to_length = sizeof(sockaddr_in6);
  } else {
    auto* in = reinterpret_cast<sockaddr_in*>(&to);
    in->sin_family = AF_INET;
    in->sin_port = htons(53);
    inet_pton(AF_INET, server.c_str(), &in->sin_addr);
    to_length = sizeof(sockaddr_in);
  }
  EXPECT_EQ(sendto(udp, query.data(), query.size(), 0, reinterpret_cast<sockaddr*>(&to), to_length),
            static_cast<ssize_t>(query.size()));
  pollfd wait{udp, POLLIN, 0};
  if (poll(&wait, 1, 5000) != 1) return {};
  std::vector<uint8_t> answer(512);
  sockaddr_storage from{};
  socklen_t from_length = sizeof(from);
  const ssize_t got = recvfrom(udp, answer.data(), answer.size(), 0,
                               reinterpret_cast<sockaddr*>(&from), &from_length);
  answer.resize(got > 0 ? static_cast<size_t>(got) : 0);
  EXPECT_EQ(from_length, to_length);
  EXPECT_EQ(std::memcmp(&from, &to, to_length), 0) << "answer not from " << server;
  return answer;
}

// Connects a sandbox-side client to `ip:port`, sends `request`, half-closes if asked, and
// reads until end of stream or error; returns what was read, `error` the read's errno.
std::string Exchange(int fd, const std::string& ip, uint16_t port, const std::string& request,
                     bool half_close, int& error) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  inet_pton(AF_INET, ip.c_str(), &address.sin_addr);
  error = 0;
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    error = errno;
    return "";
  }
  timeval timeout{30, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  // A reset can come before the request is sent: the first call to see it reports it.
  if (!request.empty() && send(fd, request.data(), request.size(), MSG_NOSIGNAL) < 0) {
    error = errno;
    return "";
  }
  if (half_close && shutdown(fd, SHUT_WR) != 0) {
    error = errno;
    // A reset that came after the send leaves the socket unconnected (ENOTCONN here) with
    // the reset still pending as its error.
    int pending = 0;
    socklen_t length = sizeof(pending);
    if (error == ENOTCONN && getsockopt(fd, SOL_SOCKET, SO_ERROR, &pending, &length) == 0 &&
        pending != 0) {
      error = pending;
    }
    return "";
  }
  std::string received;
  char buffer[4096];
  while (true) {
    const ssize_t got = recv(fd, buffer, sizeof(buffer), 0);
    if (got < 0) {
      error = errno;
      break;
    }
    if (got == 0) break;
    received.append(buffer, static_cast<size_t>(got));
  }
  return received;
}

std::string ProcStatusField(pid_t pid, const std::string& field) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind(field + ":", 0) == 0) {
      std::string value = line.substr(field.size() + 1);
      value.erase(0, value.find_first_not_of(" \t"));
      return value;
    }
  }
  return "";
}

std::vector<json> ReadAuditLog(const std::string& path) {
  std::ifstream file(path);
  std::vector<json> records;
  std::string line;
  while (std::getline(file, line)) {
    try {
      records.push_back(json::parse(line));
    } catch (const json::exception& error) {
      ADD_FAILURE() << "not JSON: " << line;
    }
  }
  return records;
}

bool Connect(int fd, const std::string& ip, uint16_t port) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  inet_pton(AF_INET, ip.c_str(), &address.sin_addr);
  const timeval timeout{30, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  return connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
}

class NetdTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root to create the test's network namespace";
    log_path_ = ::testing::TempDir() + "netd-audit-" + std::to_string(getpid()) + ".jsonl";
    unlink(log_path_.c_str());
    log_ = UniqueFd(open(log_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
    ASSERT_TRUE(log_);
    // "localhost" resolves (in the host's /etc/hosts) to 127.0.0.1, an internal address that
    // allow_private opens for the upstream's port only.
    allowlist_.allow = {Rule("localhost:80," + std::to_string(upstream_.port())),
                        Rule("nonexistent.sbx.invalid:" + std::to_string(upstream_.port())),
                        Rule("uploads.sbx.test")};
    allowlist_.deny = {Rule("uploads.sbx.test:*")};  // deny wins, on every port
    allowlist_.allow_private = {Rule("127.0.0.0/8:" + std::to_string(upstream_.port()))};
  }
  void TearDown() override {
    if (!log_path_.empty()) unlink(log_path_.c_str());
  }

  // Starts netd and hands it the namespace's capture sockets (TCP: port 80 and the upstream's,
  // 53 if asked, and `more_ports`).
  std::unique_ptr<NetdProcess> StartServing(bool dns_over_tcp = false,
                                              const std::vector<uint16_t>& more_ports = {}) {
    std::vector<uint16_t> ports = {80, upstream_.port()};
    if (dns_over_tcp) ports.push_back(kDnsPort);
    ports.insert(ports.end(), more_ports.begin(), more_ports.end());
    EXPECT_TRUE(MakeSandboxSockets(ports, sandbox_));
    auto helper = StartNetd(SBX_NETD_BINARY, "run-test", allowlist_, log_.get());
    EXPECT_TRUE(helper) << (helper ? "" : helper.error().message);
    if (!helper) return nullptr;
    std::vector<CapturedSocket> captures = {
        {CaptureKind::kUdp, 53, sandbox_.udp4.get()},
        {CaptureKind::kUdp, 53, sandbox_.udp6.get()}};
    for (size_t i = 0; i < ports.size(); ++i) {
      captures.push_back({CaptureKind::kTcp, ports[i], sandbox_.tcp_listeners[i].get()});
    }
    auto serving = (*helper)->SendCaptureSockets(captures);
    EXPECT_TRUE(serving) << (serving ? "" : serving.error().message);
    // The runner's copies are closed: netd holds the only ones.
    sandbox_.tcp_listeners.clear();
    sandbox_.udp4.reset();
    sandbox_.udp6.reset();
    return std::move(*helper);
  }

  // The fake address netd's DNS hands out for `name` ("" when it answers no address).
  std::string FakeAddressOf(const std::string& name) {
    const auto answer = AskDns(sandbox_.udp_client.get(), name, 1, 0x4242);
    if (answer.size() < 16 || (answer[3] & 0x0f) != 0 || answer[7] != 1) return "";
    char text[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, answer.data() + answer.size() - 4, text, sizeof(text));
    return text;
  }

  // StartServing(), and in `fake` the address netd's DNS gives the upstream ("localhost");
  // null if either fails.
  std::unique_ptr<NetdProcess> StartRelaying(std::string& fake) {
    auto helper = StartServing();
    if (helper) fake = FakeAddressOf("localhost");
    EXPECT_FALSE(fake.empty());
    return fake.empty() ? nullptr : std::move(helper);
  }

  // Relays the sandbox's first client to an upstream that answers a one-byte request with
  // `reply_bytes` of 'x'; the request and the sandbox's end of stream are sent. Null (with a
  // failure recorded) if any step failed.
  std::unique_ptr<NetdProcess> RequestLongReply(size_t reply_bytes, std::string& fake) {
    upstream_.set_reply_bytes(reply_bytes);
    auto helper = StartRelaying(fake);
    if (!helper) return nullptr;
    const int fd = sandbox_.tcp_clients[0].get();
    const bool sent = Connect(fd, fake, upstream_.port()) && send(fd, "x", 1, MSG_NOSIGNAL) == 1 &&
                      shutdown(fd, SHUT_WR) == 0;
    EXPECT_TRUE(sent) << std::strerror(errno);
    return sent ? std::move(helper) : nullptr;
  }

  // The audit record of the connection to `fake`:<upstream port>, once netd has written it.
  json RelayedRecord(const std::string& fake) {
    const std::string dst = fake + ":" + std::to_string(upstream_.port());
    for (int i = 0; i < 250; ++i) {
      for (const json& record : ReadAuditLog(log_path_)) {
        if (record["ev"] == "conn" && record["dst"] == dst) return record;
      }
      usleep(20'000);
    }
    return json();
  }

  UpstreamServer upstream_;
  NetworkAllowlist allowlist_;
  SandboxSockets sandbox_;
  std::string log_path_;
  UniqueFd log_;
};

// Reads exactly `size` bytes; fewer when the stream ends or fails first (`error`: its errno,
// 0 at a clean end).
std::vector<uint8_t> ReadExactly(int fd, size_t size, int& error) {
  std::vector<uint8_t> bytes(size);
  size_t got = 0;
  error = 0;
  while (got < size) {
    const ssize_t n = recv(fd, bytes.data() + got, size - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      error = n < 0 ? errno : 0;
      break;
    }
    got += static_cast<size_t>(n);
  }
  bytes.resize(got);
  return bytes;
}

int ConnectLoopback(int fd, uint16_t port) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval timeout{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  return connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 ? 0 : errno;
}

TEST_F(NetdTest, DnsOverTcpAnswersPipelinedQueriesAndEndsOversizedOrSpentSessions) {
  auto helper = StartServing(/*dns_over_tcp=*/true);
  ASSERT_TRUE(helper);
  // One more query than a session answers, all sent at once: the first kDnsTcpMaxQueries
  // answered in order, then the session ends cleanly.
  const int client = sandbox_.tcp_clients[0].get();
  ASSERT_EQ(ConnectLoopback(client, kDnsPort), 0);
  std::vector<uint8_t> pipelined;
  for (int id = 1; id <= netd::kDnsTcpMaxQueries + 1; ++id) {
    const auto query = DnsQuery(id % 2 ? "localhost" : "x.evil.test", 1, static_cast<uint16_t>(id));
    pipelined.push_back(static_cast<uint8_t>(query.size() >> 8));
    pipelined.push_back(static_cast<uint8_t>(query.size()));
    pipelined.insert(pipelined.end(), query.begin(), query.end());
  }
  ASSERT_EQ(send(client, pipelined.data(), pipelined.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(pipelined.size()));
  int error = 0;
  for (int id = 1; id <= netd::kDnsTcpMaxQueries; ++id) {
    SCOPED_TRACE(id);
    const auto length = ReadExactly(client, 2, error);
    ASSERT_EQ(length.size(), 2u) << std::strerror(error);
    const auto answer = ReadExactly(client, (size_t{length[0]} << 8) | length[1], error);
    ASSERT_GE(answer.size(), 12u);
    EXPECT_EQ((answer[0] << 8) | answer[1], id) << "answers in the queries' order";
    EXPECT_EQ(answer[3] & 0x0f, id % 2 ? 0 : 3) << "an address for localhost, NXDOMAIN for evil";
    if (id % 2) {
      EXPECT_EQ(answer[7], 1) << "one address";
    }
  }
  EXPECT_TRUE(ReadExactly(client, 1, error).empty());
  EXPECT_EQ(error, 0) << "a clean end after the last query a session answers";

  // A length beyond any query the stub takes: no answer, a reset.
  const int oversized = sandbox_.tcp_clients[1].get();
  ASSERT_EQ(ConnectLoopback(oversized, kDnsPort), 0);
  const uint8_t too_long[] = {0x04, 0xD1, 0, 1};  // 1233 bytes announced
  ASSERT_EQ(send(oversized, too_long, sizeof(too_long), MSG_NOSIGNAL), 4);
  EXPECT_TRUE(ReadExactly(oversized, 2, error).empty());
  EXPECT_EQ(error, ECONNRESET);

  // Every query is logged as a UDP one is, and none became a relayed connection.
  auto summary = helper->Stop();
  ASSERT_TRUE(summary) << summary.error().message;
  EXPECT_EQ(summary->dns_queries, static_cast<uint64_t>(netd::kDnsTcpMaxQueries));
  size_t dns_records = 0, conn_records = 0;
  for (const json& record : ReadAuditLog(log_path_)) {
    dns_records += record["ev"] == "dns";
    conn_records += record["ev"] == "conn";
  }
  EXPECT_EQ(dns_records, static_cast<size_t>(netd::kDnsTcpMaxQueries));
  EXPECT_EQ(conn_records, 0u);
  EXPECT_EQ(upstream_.connections(), 0);
}

TEST_F(NetdTest, ServesDnsRelaysAllowedConnectionsDeniesOthersAndSummarizes) {
  auto helper = StartServing();
  ASSERT_TRUE(helper);

  // DNS: an allowed name gets a fake address; AAAA gets NODATA; others NXDOMAIN.
  const std::string fake = FakeAddressOf("localhost");
  ASSERT_EQ(fake.rfind("198.1", 0), 0u) << fake;
  EXPECT_EQ(FakeAddressOf("LOCALHOST."), fake);
  const auto aaaa = AskDns(sandbox_.udp_client.get(), "localhost", 28, 7);
  ASSERT_GE(aaaa.size(), 12u);
  EXPECT_EQ(aaaa[3] & 0x0f, 0);
  EXPECT_EQ(aaaa[7], 0);
  // Any resolver address reaches the stub (the local default routes), on the socket of its
  // family, and the answer comes back from that address.
  EXPECT_GE(AskDns(sandbox_.udp_client.get(), "localhost", 1, 9, "8.8.8.8").size(), 16u);
  EXPECT_GE(AskDns(sandbox_.udp6_client.get(), "localhost", 1, 10, "2001:db8::53").size(), 16u);
  const auto evil = AskDns(sandbox_.udp_client.get(), "x9f2.evil.test", 1, 8);
  ASSERT_GE(evil.size(), 12u);
  EXPECT_EQ(evil[3] & 0x0f, 3);  // NXDOMAIN
  EXPECT_EQ(FakeAddressOf("uploads.sbx.test"), "");

  // An allowed connection to the fake address: relayed both ways, half-close included.
  int error = 0;
  EXPECT_EQ(Exchange(sandbox_.tcp_clients[0].get(), fake, upstream_.port(), "hello", true, error),
            "echo:hello");
  EXPECT_EQ(error, 0);
  EXPECT_EQ(upstream_.connections(), 1);

  // An IP literal no rule allows: reset, the upstream never reached.
  Exchange(sandbox_.tcp_clients[1].get(), "203.0.113.7", upstream_.port(), "x", false, error);
  EXPECT_EQ(error, ECONNRESET);
  // The sandbox's own loopback as a destination is refused outright.
  Exchange(sandbox_.tcp_clients[2].get(), "127.0.0.1", upstream_.port(), "x", false, error);
  EXPECT_EQ(error, ECONNRESET);
  // A fake address never handed out.
  Exchange(sandbox_.tcp_clients[3].get(), "198.18.0.1", upstream_.port(), "x", false, error);
  EXPECT_EQ(error, ECONNRESET);
  EXPECT_EQ(upstream_.connections(), 1);

  // Plain HTTP on port 80 whose Host is not the fake address's name: a 403 page.
  const std::string page = Exchange(sandbox_.tcp_clients[4].get(), fake, 80,
                                    "GET / HTTP/1.1\r\nHost: evil.test\r\n\r\n", false, error);
  EXPECT_EQ(page.rfind("HTTP/1.1 403 Forbidden\r\n", 0), 0u) << page;
  EXPECT_NE(page.find("blocked by sbx network policy: host_mismatch"), std::string::npos) << page;

  // An allowed name the host cannot resolve.
  const std::string unresolvable = FakeAddressOf("nonexistent.sbx.invalid");
  ASSERT_FALSE(unresolvable.empty());
  Exchange(sandbox_.tcp_clients[5].get(), unresolvable, upstream_.port(), "x", false, error);
  EXPECT_EQ(error, ECONNRESET);

  // The helper runs unprivileged and confined.
  EXPECT_EQ(ProcStatusField(helper->pid(), "Uid"), "65534\t65534\t65534\t65534");
  EXPECT_EQ(ProcStatusField(helper->pid(), "Gid"), "65534\t65534\t65534\t65534");
  EXPECT_EQ(ProcStatusField(helper->pid(), "Groups"), "");
  EXPECT_EQ(ProcStatusField(helper->pid(), "CapEff"), "0000000000000000");
  EXPECT_EQ(ProcStatusField(helper->pid(), "CapPrm"), "0000000000000000");
  EXPECT_EQ(ProcStatusField(helper->pid(), "CapBnd"), "0000000000000000");
  EXPECT_EQ(ProcStatusField(helper->pid(), "NoNewPrivs"), "1");
  EXPECT_EQ(ProcStatusField(helper->pid(), "Seccomp"), "2");

  auto summary = helper->Stop();
  ASSERT_TRUE(summary) << summary.error().message;
  EXPECT_EQ(summary->dns_queries, 8u);
  EXPECT_EQ(summary->bytes_up, 5u);
  EXPECT_EQ(summary->bytes_down, 10u);
  EXPECT_EQ(summary->allowed, 7u);  // localhost A 4 times, AAAA, nonexistent A; one connection
  EXPECT_EQ(summary->denied, 7u);
  EXPECT_NE(std::find(summary->denied_names.begin(), summary->denied_names.end(), "x9f2.evil.test"),
            summary->denied_names.end());

  // The audit log: one JSON object per line, the fields of policies/SCHEMA.md.
  const auto records = ReadAuditLog(log_path_);
  ASSERT_EQ(records.size(), 14u);  // 8 queries, 6 connections
  for (size_t i = 0; i < records.size(); ++i) {
    EXPECT_EQ(records[i]["v"], 1);
    EXPECT_EQ(records[i]["run"], "run-test");
    EXPECT_EQ(records[i]["seq"], i + 1);
  }
  auto find = [&](const std::string& ev, const std::string& key, const std::string& value) {
    for (const json& record : records) {
      if (record["ev"] == ev && record.contains(key) && record[key] == value) return record;
    }
    return json();
  };
  EXPECT_EQ(find("dns", "qname", "x9f2.evil.test")["reason"], "no_rule");
  EXPECT_EQ(find("dns", "qname", "uploads.sbx.test")["reason"], "deny_rule");
  const json relayed = find("conn", "end", "fin");
  EXPECT_EQ(relayed["name"], "localhost");
  EXPECT_EQ(relayed["name_src"], "fakeip");
  EXPECT_EQ(relayed["upstream"], "127.0.0.1:" + std::to_string(upstream_.port()));
  EXPECT_EQ(relayed["bytes_up"], 5);
  EXPECT_EQ(relayed["bytes_down"], 10);
  EXPECT_EQ(find("conn", "dst", "203.0.113.7:" + std::to_string(upstream_.port()))["reason"],
            "no_rule");
  EXPECT_EQ(find("conn", "dst", "198.18.0.1:" + std::to_string(upstream_.port()))["reason"],
            "unmapped_fake_ip");
  EXPECT_EQ(find("conn", "host", "evil.test")["reason"], "host_mismatch");
  EXPECT_EQ(find("conn", "name", "nonexistent.sbx.invalid")["reason"], "resolve_failed");
  // The log is write-only, as the runner opens it: netd hashed what it wrote, as it wrote it.
  EXPECT_EQ(summary->log_sha256, testing::Sha256Of(log_path_));
}

TEST_F(NetdTest, LimitsConnectionsAndEgressBytes) {
  allowlist_.limits.max_connections = 2;  // in the run, not at once
  allowlist_.limits.egress_bytes_max = 1024;  // the smallest a policy may set
  auto helper = StartServing();
  ASSERT_TRUE(helper);
  const std::string fake = FakeAddressOf("localhost");
  ASSERT_FALSE(fake.empty());

  // The first connection, held open (no half-close), sends 1000 bytes.
  ASSERT_TRUE(Connect(sandbox_.tcp_clients[0].get(), fake, upstream_.port()));
  const std::string first(1000, 'a');
  ASSERT_EQ(send(sandbox_.tcp_clients[0].get(), first.data(), first.size(), MSG_NOSIGNAL), 1000);
  for (int i = 0; i < 50 && upstream_.received_bytes() < 1000; ++i) usleep(20'000);
  // The second: 1000 + 100 bytes would exceed egress_bytes_max, so 24 go out and it is cut.
  int error = 0;
  Exchange(sandbox_.tcp_clients[1].get(), fake, upstream_.port(), std::string(100, 'b'), true,
           error);
  EXPECT_EQ(error, ECONNRESET);
  EXPECT_EQ(upstream_.received_bytes_after_waiting_for(1024), 1024u) << "relayed up to the limit";
  // The held connection ends normally: its 1000 bytes were within the 1024 allowed.
  shutdown(sandbox_.tcp_clients[0].get(), SHUT_WR);
  char buffer[2048];
  EXPECT_EQ(recv(sandbox_.tcp_clients[0].get(), buffer, sizeof(buffer), MSG_WAITALL), 1005);
  // None is open now, but the run's two are spent: a third is reset.
  sandbox_.tcp_clients[0].reset();
  Exchange(sandbox_.tcp_clients[2].get(), fake, upstream_.port(), "x", true, error);
  EXPECT_EQ(error, ECONNRESET);

  auto summary = helper->Stop();
  ASSERT_TRUE(summary);
  EXPECT_EQ(summary->bytes_up, 1024u);
  const auto records = ReadAuditLog(log_path_);
  int limited_connections = 0, limited_bytes = 0;
  for (const json& record : records) {
    limited_connections += record.value("reason", "") == "limit_connections";
    if (record.value("end", "") == "limit_bytes") {
      ++limited_bytes;
      EXPECT_EQ(record["bytes_up"], 24) << record;
    }
  }
  EXPECT_EQ(limited_connections, 1);
  EXPECT_EQ(limited_bytes, 1);
  EXPECT_EQ(upstream_.connections(), 2);
}

TEST_F(NetdTest, RelaysBulkBothWaysAndCountsEveryByte) {
  std::string fake;
  auto helper = StartRelaying(fake);
  ASSERT_TRUE(helper);
  // Far more than a pipe and the socket buffers hold: each side waits for the other, and the
  // pipes grow.
  const std::string request(6 << 20, 'u');
  int error = 0;
  const std::string reply =
      Exchange(sandbox_.tcp_clients[0].get(), fake, upstream_.port(), request, true, error);
  EXPECT_EQ(error, 0);
  ASSERT_EQ(reply.size(), request.size() + 5);
  EXPECT_TRUE(reply == "echo:" + request) << "the relayed bytes differ";
  EXPECT_EQ(upstream_.received_bytes_after_waiting_for(request.size()), request.size());
  const json record = RelayedRecord(fake);
  EXPECT_EQ(record["end"], "fin");
  EXPECT_EQ(record["bytes_up"], request.size());
  EXPECT_EQ(record["bytes_down"], request.size() + 5);
  auto summary = helper->Stop();
  ASSERT_TRUE(summary);
  EXPECT_EQ(summary->bytes_up, request.size());
  EXPECT_EQ(summary->bytes_down, request.size() + 5);
}

TEST_F(NetdTest, UpstreamEndingFirstLeavesTheSandboxSideOpen) {
  upstream_.set_greet_first();  // "hello\n", then its end of stream, then it reads
  std::string fake;
  auto helper = StartRelaying(fake);
  ASSERT_TRUE(helper);
  const int fd = sandbox_.tcp_clients[0].get();
  ASSERT_TRUE(Connect(fd, fake, upstream_.port()));
  char buffer[64];
  EXPECT_EQ(recv(fd, buffer, sizeof(buffer), MSG_WAITALL), 6);  // "hello\n", then end of stream
  EXPECT_EQ(std::string(buffer, 6), "hello\n");
  // Its end of stream reached the sandbox as a half-close: the sandbox can still send.
  ASSERT_EQ(send(fd, "after-eof", 9, MSG_NOSIGNAL), 9);
  ASSERT_EQ(shutdown(fd, SHUT_WR), 0);
  const json record = RelayedRecord(fake);
  EXPECT_EQ(record["end"], "fin");
  EXPECT_EQ(record["bytes_up"], 9);
  EXPECT_EQ(record["bytes_down"], 6);
  EXPECT_EQ(upstream_.received_bytes_after_waiting_for(9), 9u);
  auto summary = helper->Stop();
  ASSERT_TRUE(summary);
  EXPECT_EQ(summary->bytes_up, 9u);
  EXPECT_EQ(summary->bytes_down, 6u);
}

TEST_F(NetdTest, DeliversAllAnUpstreamSentBeforeItsEndToASlowReader) {
  // The upstream sends more than the socket buffers hold and ends; the sandbox reads only
  // later. netd reads ahead into its pipe while the sandbox is not reading, so it sees the end
  // of stream with bytes still in the pipe: they must all arrive before the sandbox's EOF.
  const size_t reply_bytes = 24 << 20;
  std::string fake;
  auto helper = RequestLongReply(reply_bytes, fake);
  ASSERT_TRUE(helper);
  const int fd = sandbox_.tcp_clients[0].get();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  size_t received = 0;
  std::vector<char> buffer(1 << 20);
  ssize_t got;
  while ((got = recv(fd, buffer.data(), buffer.size(), 0)) > 0) {
    ASSERT_EQ(std::count(buffer.begin(), buffer.begin() + got, 'x'), got);
    received += static_cast<size_t>(got);
  }
  EXPECT_EQ(got, 0) << std::strerror(errno);
  EXPECT_EQ(received, reply_bytes);
  const json record = RelayedRecord(fake);
  EXPECT_EQ(record["end"], "fin");
  EXPECT_EQ(record["bytes_down"], reply_bytes);
  auto summary = helper->Stop();
  ASSERT_TRUE(summary);
  EXPECT_EQ(summary->bytes_down, reply_bytes);
}

// A listener whose accept queue is full: the kernel drops further SYNs, so a connect to it
// gets no answer at all (the kernel alone would retry for about two minutes). A backlog of 1
// holds two connections (the queue is full once it holds more than the backlog); with a
// backlog of 0 the first SYN would already need a SYN cookie.
class SilentListener {
 public:
  SilentListener() {
    listener_ = LoopbackListener(1, &port_);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = htons(port_);
    for (UniqueFd& filler : fillers_) {
      filler = UniqueFd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
      const timeval timeout{5, 0};
      setsockopt(filler.get(), SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));  // connect
      EXPECT_EQ(connect(filler.get(), reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0)
          << std::strerror(errno);
    }
  }
  uint16_t port() const { return port_; }

 private:
  UniqueFd listener_;
  UniqueFd fillers_[2];  // the connections the queue holds, never accepted
  uint16_t port_ = 0;
};

TEST_F(NetdTest, GivesUpAConnectThatGetsNoAnswerAtTheConnectTimeout) {
  SilentListener silent;
  const std::string port = std::to_string(silent.port());
  allowlist_.allow.push_back(Rule("localhost:" + port));
  allowlist_.allow_private.push_back(Rule("127.0.0.0/8:" + port));
  allowlist_.limits.connect_timeout_seconds = 0.5;
  auto helper = StartServing(false, {silent.port()});
  ASSERT_TRUE(helper);
  const std::string fake = FakeAddressOf("localhost");
  ASSERT_FALSE(fake.empty());
  const auto start = std::chrono::steady_clock::now();
  int error = 0;
  Exchange(sandbox_.tcp_clients[0].get(), fake, silent.port(), "x", true, error);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(error, ECONNRESET) << std::strerror(error);
  EXPECT_GE(seconds, 0.45);
  EXPECT_LT(seconds, 5.0) << "the connect was not cut at its timeout";
  json record;
  for (int i = 0; i < 250 && record.is_null(); ++i, usleep(20'000)) {
    for (const json& line : ReadAuditLog(log_path_)) {
      if (line["ev"] == "conn" && line["dst"] == fake + ":" + port) record = line;
    }
  }
  EXPECT_EQ(record["decision"], "deny");
  EXPECT_EQ(record["reason"], "upstream_error");
}

TEST_F(NetdTest, CutsARelayIdleForItsIdleTimeout) {
  allowlist_.limits.idle_timeout_seconds = 1;  // the least a policy may set
  std::string fake;
  auto helper = StartRelaying(fake);
  ASSERT_TRUE(helper);
  const int fd = sandbox_.tcp_clients[0].get();
  ASSERT_TRUE(Connect(fd, fake, upstream_.port()));
  ASSERT_EQ(send(fd, "x", 1, MSG_NOSIGNAL), 1);  // the upstream answers only after our end
  const auto start = std::chrono::steady_clock::now();
  char byte;
  const ssize_t got = recv(fd, &byte, 1, 0);
  const int error = got < 0 ? errno : 0;
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(got, -1);
  EXPECT_EQ(error, ECONNRESET) << std::strerror(error);
  EXPECT_GE(seconds, 0.9);
  EXPECT_LT(seconds, 5.0);
  const json record = RelayedRecord(fake);
  EXPECT_EQ(record["end"], "idle");
  EXPECT_EQ(record["bytes_up"], 1);
}

TEST_F(NetdTest, SurvivesASandboxThatResetsWhileItIsBeingWritten) {
  std::string fake;
  auto helper = RequestLongReply(64 << 20, fake);
  ASSERT_TRUE(helper);
  const int fd = sandbox_.tcp_clients[0].get();
  std::vector<char> buffer(65536);
  ASSERT_EQ(recv(fd, buffer.data(), buffer.size(), MSG_WAITALL), 65536);
  // Closing with unread bytes resets. netd's socket had the sandbox's end of stream, so its
  // next write fails with EPIPE, which raises SIGPIPE unless netd ignores it.
  sandbox_.tcp_clients[0].reset();
  const json record = RelayedRecord(fake);
  EXPECT_EQ(record["end"], "reset");
  // A netd killed by the SIGPIPE would have no summary to give.
  auto summary = helper->Stop();
  ASSERT_TRUE(summary) << summary.error().message;
}

TEST_F(NetdTest, CutsALargeUploadAtTheEgressLimit) {
  allowlist_.limits.egress_bytes_max = 1 << 20;
  std::string fake;
  auto helper = StartRelaying(fake);
  ASSERT_TRUE(helper);
  int error = 0;
  Exchange(sandbox_.tcp_clients[0].get(), fake, upstream_.port(), std::string(8 << 20, 'u'), true,
           error);
  // Reset while sending, or after (the socket buffers took it all): then shutdown says so.
  EXPECT_TRUE(error == ECONNRESET || error == EPIPE || error == ENOTCONN) << std::strerror(error);
  const json record = RelayedRecord(fake);
  EXPECT_EQ(record["end"], "limit_bytes");
  EXPECT_EQ(record["bytes_up"].get<uint64_t>(), 1u << 20) << "relayed up to the limit";
  EXPECT_EQ(upstream_.received_bytes_after_waiting_for(1u << 20), 1u << 20);
  auto summary = helper->Stop();
  ASSERT_TRUE(summary);
  EXPECT_EQ(summary->bytes_up, 1u << 20);
}

TEST_F(NetdTest, EndsWhenTheRunnerHangsUp) {
  auto helper = StartServing();
  ASSERT_TRUE(helper);
  ASSERT_EQ(shutdown(helper->control_fd(), SHUT_RDWR), 0);
  pollfd exited{helper->pidfd(), POLLIN, 0};
  EXPECT_EQ(poll(&exited, 1, 5000), 1) << "sbx-netd still runs after its control socket closed";
}

TEST_F(NetdTest, ReportsAMissingBinary) {
  auto helper = StartNetd("/nonexistent/sbx-netd", "run", allowlist_, -1);
  ASSERT_FALSE(helper);
  EXPECT_NE(helper.error().message.find("execve(/nonexistent/sbx-netd)"), std::string::npos)
      << helper.error().message;
}

TEST_F(NetdTest, ReportsAnExecveFailureWhenWaitingForReady) {
  // Executable but not a program: found at start, refused by execve, which the runner is not
  // waiting for then; the wait for "ready" reports it.
  const std::string path = ::testing::TempDir() + "not-sbx-netd-" + std::to_string(getpid());
  std::ofstream(path) << "not an executable format\n";
  ASSERT_EQ(chmod(path.c_str(), 0755), 0);
  // Usually the hello is sent before the failed child exits; when the child is gone first, the
  // hello's EPIPE already reports the same reason (StartNetd's ExecFailureOr).
  auto helper = StartNetd(path, "run", allowlist_, -1);
  std::string message;
  if (helper) {
    auto serving = (*helper)->SendCaptureSockets({});
    ASSERT_FALSE(serving);
    message = serving.error().message;
  } else {
    message = helper.error().message;
  }
  unlink(path.c_str());
  EXPECT_NE(message.find("execve(" + path + "): Exec format error"), std::string::npos) << message;
}

TEST_F(NetdTest, StopBeforeTheCaptureSocketsIsAProtocolError) {
  auto helper = StartNetd(SBX_NETD_BINARY, "run", allowlist_, -1);
  ASSERT_TRUE(helper) << helper.error().message;
  auto summary = (*helper)->Stop();
  ASSERT_FALSE(summary);
  EXPECT_NE(summary.error().message.find("control: "), std::string::npos)
      << summary.error().message;
}

}  // namespace
}  // namespace sbx

namespace sbx {
namespace {

std::string DirectoryOf(const std::string& path) { return path.substr(0, path.rfind('/')); }

TEST(NetdPath, TheBuildPutsSbxNetdNextToSbx) {
  EXPECT_EQ(DirectoryOf(SBX_NETD_BINARY), DirectoryOf(SBX_BINARY));
}

TEST(NetdPath, LooksNextToTheRunningExecutable) {
  // This test binary lives in build/tests/, where there is no sbx-netd.
  char exe[PATH_MAX];
  const ssize_t size = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  ASSERT_GT(size, 0);
  const std::string expected =
      DirectoryOf(std::string(exe, static_cast<size_t>(size))) + "/sbx-netd";
  auto path = NetdNextToExecutable();
  ASSERT_FALSE(path) << *path;
  EXPECT_NE(path.error().message.find(expected), std::string::npos) << path.error().message;
}

}  // namespace
}  // namespace sbx
