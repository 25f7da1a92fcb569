// The all-port capture's redirect on a real kernel (sandbox/net/network_redirect.h): a child in a
// fresh user and network namespace sets up capture the way the sandbox child does, then
// connects to addresses on a port nothing listens on; the test, like the runner and
// sbx-netd, accepts them on the handed-over listener and reads where they were going.
// The control is the same child without the redirect: the same connect is refused.
#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netlink.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include <gtest/gtest.h>

#include "base/unique_fd.h"
#include "sandbox/isolation/loopback.h"
#include "sandbox/net/network_capture.h"
#include "sandbox/net/network_redirect.h"
#include "src/netd/endpoint.h"

namespace sbx {
namespace {

constexpr uint16_t kUnservedPort = 7777;
constexpr char kV4Destination[] = "203.0.113.5";
constexpr char kV6Destination[] = "2001:db8::7";

// What the child reports, in order, over a pipe.
struct ChildReport {
  int setup_step = -1;  // ChildStep of a failed setup, -1 when setup worked
  int setup_err = 0;
  int v4_connect = -1;        // 0 or the errno of connect(kV4Destination:kUnservedPort)
  int v6_connect = -1;        // the same for kV6Destination; -1: no IPv6 in this kernel
  int loopback_connect = -1;  // 0 or errno: to the child's own listener on 127.0.0.1
  int loopback_accepted = 0;  // 1: that connection reached the child's listener, not ours
  long udp_tracked = -1;      // conntrack entries kUdpFlood datagrams added; -1: no count
  long tcp_tracked = -1;      // live entries kTcpFlood closed loopback connections left
  long tcp_left = -1;         // the same kTcpWaitSeconds later
};

// UDP datagrams the child sends, each to its own address: each would be a conntrack entry.
constexpr int kUdpFlood = 300;

// This network namespace's conntrack entries (the file shows the reader's namespace); -1 when
// conntrack is not loaded.
long ConntrackCount() {
  char text[32] = {};
  UniqueFd file(::open("/proc/sys/net/netfilter/nf_conntrack_count", O_RDONLY | O_CLOEXEC));
  if (!file || ::read(file.get(), text, sizeof(text) - 1) <= 0) return -1;
  return std::strtol(text, nullptr, 10);
}

// Sends kUdpFlood datagrams to 10.77.x.y:9 (routed to loopback, where nothing listens) and
// returns how many conntrack entries they added.
long TrackedUdpFlows() {
  const long before = ConntrackCount();
  UniqueFd sock(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (before < 0 || !sock) return -1;
  for (int i = 0; i < kUdpFlood; ++i) {
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(9);
    to.sin_addr.s_addr = htonl(0x0A4D0000u | static_cast<uint32_t>(i + 1));
    (void)::sendto(sock.get(), "x", 1, 0, reinterpret_cast<sockaddr*>(&to), sizeof(to));
  }
  return ConntrackCount() - before;
}

// A listening TCP socket on 127.0.0.1, on a port the kernel picks (written to *address); -1
// with errno on failure.
int ListenOnLoopback(sockaddr_in* address) {
  UniqueFd listener(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  *address = sockaddr_in{};
  address->sin_family = AF_INET;
  address->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(*address);
  if (!listener || ::bind(listener.get(), reinterpret_cast<sockaddr*>(address), length) != 0 ||
      ::listen(listener.get(), 64) != 0 ||
      ::getsockname(listener.get(), reinterpret_cast<sockaddr*>(address), &length) != 0) {
    return -1;
  }
  return listener.release();
}

// TCP connections the child opens and closes on its own loopback server, each a conntrack
// entry (loopback TCP is tracked), and how long it then waits before counting them again.
constexpr int kTcpFlood = 300;
constexpr int kTcpWaitSeconds = 4;

// This namespace's live conntrack entries: the lines of /proc/net/nf_conntrack (listing them
// also drops the expired ones, which the kernel's collector would only reach later); -1 when
// the file is missing.
long LiveConntrackEntries() {
  UniqueFd file(::open("/proc/net/nf_conntrack", O_RDONLY | O_CLOEXEC));
  if (!file) return -1;
  long lines = 0;
  char buffer[65536];
  ssize_t got;
  while ((got = ::read(file.get(), buffer, sizeof(buffer))) > 0) {
    lines += std::count(buffer, buffer + got, '\n');
  }
  return lines;
}

// Opens and closes kTcpFlood connections to a loopback server of its own (client first, so
// each ends in TIME_WAIT, 120 s by default), counts the entries at once and again
// kTcpWaitSeconds later.
void TrackClosedTcpConnections(ChildReport& report) {
  sockaddr_in address{};
  UniqueFd listener(ListenOnLoopback(&address));
  if (!listener) return;
  const socklen_t length = sizeof(address);
  const long before = LiveConntrackEntries();
  if (before < 0) return;
  for (int i = 0; i < kTcpFlood; ++i) {
    UniqueFd client(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!client || ::connect(client.get(), reinterpret_cast<sockaddr*>(&address), length) != 0) return;
    UniqueFd server(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
    client.reset();  // FIN first from the client: its side ends in TIME_WAIT
    char byte;
    (void)!::read(server.get(), &byte, 1);  // the FIN
  }
  report.tcp_tracked = LiveConntrackEntries() - before;
  ::sleep(kTcpWaitSeconds);
  report.tcp_left = LiveConntrackEntries() - before;
}

int ConnectTo(int family, const char* address, uint16_t port) {
  int fd = ::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return errno;
  sockaddr_storage storage{};
  socklen_t length;
  if (family == AF_INET6) {
    auto* in6 = reinterpret_cast<sockaddr_in6*>(&storage);
    in6->sin6_family = AF_INET6;
    in6->sin6_port = htons(port);
    inet_pton(AF_INET6, address, &in6->sin6_addr);
    length = sizeof(*in6);
  } else {
    auto* in = reinterpret_cast<sockaddr_in*>(&storage);
    in->sin_family = AF_INET;
    in->sin_port = htons(port);
    inet_pton(AF_INET, address, &in->sin_addr);
    length = sizeof(*in);
  }
  // Left open on success: the connection must still exist when the test accepts it.
  return ::connect(fd, reinterpret_cast<sockaddr*>(&storage), length) == 0 ? 0 : errno;
}

// A code's own server on loopback: the redirect must leave it reachable.
void ProbeOwnLoopbackServer(ChildReport& report) {
  sockaddr_in address{};
  // Left open: the child keeps its connections until the test is done.
  const int listener = ListenOnLoopback(&address);
  if (listener < 0) {
    report.loopback_connect = errno;
    return;
  }
  report.loopback_connect = ConnectTo(AF_INET, "127.0.0.1", ntohs(address.sin_port));
  pollfd ready{listener, POLLIN, 0};
  report.loopback_accepted = ::poll(&ready, 1, 2000) == 1 ? 1 : 0;
}

[[noreturn]] void Child(const CapturePlan& plan, bool track_tcp, int report_fd, int done_fd) {
  ChildReport report;
  ChildStep step{};
  int err = 0;
  if (::unshare(CLONE_NEWUSER | CLONE_NEWNET) != 0) {
    report.setup_err = errno;
    report.setup_step = static_cast<int>(ChildStep::kNetworkRoutes);
  } else if ((err = BringUpLoopbackInChild()) != 0) {
    report.setup_err = err;
    report.setup_step = static_cast<int>(ChildStep::kNetworkRoutes);
  } else if ((err = SetUpCaptureInChild(plan, &step)) != 0) {
    report.setup_err = err;
    report.setup_step = static_cast<int>(step);
    ::close(plan.send_fd);  // EOF for the receiver, as when a sandbox child exits on failure
  } else {
    report.v4_connect = ConnectTo(AF_INET, kV4Destination, kUnservedPort);
    int probe = ::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (probe >= 0) {
      ::close(probe);
      report.v6_connect = ConnectTo(AF_INET6, kV6Destination, kUnservedPort);
    }
    ProbeOwnLoopbackServer(report);
    report.udp_tracked = TrackedUdpFlows();
    if (track_tcp) TrackClosedTcpConnections(report);
  }
  (void)!::write(report_fd, &report, sizeof(report));
  char byte;
  (void)!::read(done_fd, &byte, 1);  // keeps the connections open until the test is done
  _exit(0);
}

struct CaptureRun {
  ChildReport report;
  std::vector<CapturedSocket> sockets;
  pid_t pid = -1;
  UniqueFd done;  // closing it lets the child exit
  ~CaptureRun() {
    done.reset();
    if (pid > 0) ::waitpid(pid, nullptr, 0);
    for (const auto& socket : sockets) ::close(socket.fd);
  }
};

// A batch of one NEWTABLE without a name, acknowledged with an error: nf_tables refuses it
// (and so installs nothing), as a kernel without NAT refuses the redirect's chain.
NetfilterBatch BrokenBatch() {
  std::vector<uint8_t> batch;
  auto message = [&](uint16_t type, uint16_t flags, uint8_t family) {
    nlmsghdr header{};
    header.nlmsg_len = NLMSG_LENGTH(sizeof(nfgenmsg));
    header.nlmsg_type = type;
    header.nlmsg_flags = static_cast<uint16_t>(NLM_F_REQUEST | flags);
    nfgenmsg body{};
    body.nfgen_family = family;
    body.res_id = htons(NFNL_SUBSYS_NFTABLES);
    const auto* h = reinterpret_cast<const uint8_t*>(&header);
    const auto* b = reinterpret_cast<const uint8_t*>(&body);
    batch.insert(batch.end(), h, h + sizeof(header));
    batch.insert(batch.end(), b, b + sizeof(body));
  };
  message(NFNL_MSG_BATCH_BEGIN, 0, AF_UNSPEC);
  message(NFNL_SUBSYS_NFTABLES << 8 | NFT_MSG_NEWTABLE, NLM_F_CREATE | NLM_F_ACK, NFPROTO_IPV4);
  message(NFNL_MSG_BATCH_END, 0, AF_UNSPEC);
  return {batch, 1};
}

// Which batch the child sends for the redirect.
enum class Batch {
  kReal,            // what runs send
  kShortLivedOnly,  // the short-lived TCP batch, and no fallback (refused: the kernel lacks it)
  kNoTimeouts,      // the short-lived batch refused, as a kernel without ct timeouts does
  kTrackingAll,     // the redirect alone (Tracking::kEverything)
  kNoNotrack,       // the notrack batches refused, as a kernel without nft_ct refuses them
  kRefused,         // every batch refused, as a kernel without nf_tables NAT does
};

// Starts the child with capture per `redirect` and per-port listeners on `tcp_ports` (the
// fallback), and reads its report.
void StartChild(RedirectMode redirect, CaptureRun& run,
                const std::vector<uint16_t>& tcp_ports = {}, Batch batch = Batch::kReal,
                bool track_tcp = false) {
  int capture[2], report[2], done[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, capture), 0);
  ASSERT_EQ(::pipe2(report, O_CLOEXEC), 0);
  ASSERT_EQ(::pipe2(done, O_CLOEXEC), 0);
  UniqueFd receive(capture[0]), report_read(report[0]);
  CapturePlan plan = PrepareCapturePlan(tcp_ports, redirect, 0, capture[1]);
  // A batch the kernel refuses (a table with no name) stands for what a kernel without the
  // feature answers.
  for (RedirectBatches* batches : {&plan.redirect_both, &plan.redirect_v4_only}) {
    switch (batch) {
      case Batch::kReal: break;
      case Batch::kShortLivedOnly:
        batches->untracking = batches->redirect_only = BrokenBatch();
        break;
      case Batch::kNoTimeouts: batches->short_lived = BrokenBatch(); break;
      case Batch::kTrackingAll:
        batches->short_lived = batches->untracking = batches->redirect_only;
        break;
      case Batch::kNoNotrack: batches->short_lived = batches->untracking = BrokenBatch(); break;
      case Batch::kRefused: *batches = {BrokenBatch(), BrokenBatch(), BrokenBatch()}; break;
    }
  }
  run.pid = ::fork();
  ASSERT_GE(run.pid, 0);
  if (run.pid == 0) {
    // The child's copies of the other ends, or its wait for EOF on `done` would never end.
    ::close(done[1]);
    ::close(report[0]);
    ::close(capture[0]);
    Child(plan, track_tcp, report[1], done[0]);
  }
  ::close(capture[1]);
  ::close(report[1]);
  ::close(done[0]);
  run.done.reset(done[1]);
  run.sockets = ReceiveCapturedSockets(plan, receive.get(), 10'000);
  ASSERT_EQ(::read(report_read.get(), &run.report, sizeof(run.report)),
            static_cast<ssize_t>(sizeof(run.report)));
}

// What the child's redirect socket says its batch left tracked; -1 without a redirect socket.
int TrackingOf(const CaptureRun& run) {
  for (const auto& socket : run.sockets) {
    if (socket.kind == CaptureKind::kRedirect) return static_cast<int>(socket.tracking);
  }
  return -1;
}

// Accepts one connection on `listener` and returns its original destination, "host:port".
std::string AcceptOriginalDestination(int listener) {
  pollfd ready{listener, POLLIN, 0};
  if (::poll(&ready, 1, 5000) != 1) return "(no connection)";
  UniqueFd connection(::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC));
  if (!connection) return std::string("(accept: ") + std::strerror(errno) + ")";
  sockaddr_storage local{};
  socklen_t length = sizeof(local);
  ::getsockname(connection.get(), reinterpret_cast<sockaddr*>(&local), &length);
  auto local_endpoint = netd::EndpointFromSockaddr(reinterpret_cast<sockaddr*>(&local), length);
  if (!local_endpoint) return "(no local address)";
  auto original = netd::OriginalDestination(connection.get(), *local_endpoint);
  if (!original) return "(no original destination; local " + netd::EndpointToString(*local_endpoint) + ")";
  return netd::EndpointToString(*original);
}

TEST(AllPortRedirect, ConnectionsToAnyPortReachTheListenerWithTheirOriginalDestination) {
  {
    // Control: without the redirect nothing listens on that port in the namespace.
    CaptureRun control;
    StartChild(RedirectMode::kOff, control);
    ASSERT_EQ(control.report.setup_step, -1) << std::strerror(control.report.setup_err);
    EXPECT_EQ(control.report.v4_connect, ECONNREFUSED) << std::strerror(control.report.v4_connect);
  }
  CaptureRun run;
  StartChild(RedirectMode::kRequired, run);
  // Not ENOENT: a misspelled expression or chain type answers that too.
  if (run.report.setup_step == static_cast<int>(ChildStep::kNetworkRedirect) &&
      (run.report.setup_err == EOPNOTSUPP || run.report.setup_err == EPROTONOSUPPORT)) {
    GTEST_SKIP() << "the kernel lacks nf_tables NAT in network namespaces: "
                 << std::strerror(run.report.setup_err);
  }
  ASSERT_EQ(run.report.setup_step, -1)
      << ChildStepName(static_cast<ChildStep>(run.report.setup_step)) << ": "
      << std::strerror(run.report.setup_err);
  int redirect = -1;
  for (const auto& socket : run.sockets) {
    if (socket.kind == CaptureKind::kTcp) {
      EXPECT_EQ(socket.port, kDnsPort) << "no per-port listener with the redirect but DNS's";
    }
    if (socket.kind == CaptureKind::kRedirect) redirect = socket.fd;
  }
  ASSERT_NE(redirect, -1) << "the redirect listener was handed over";

  ASSERT_EQ(run.report.v4_connect, 0) << std::strerror(run.report.v4_connect);
  EXPECT_EQ(AcceptOriginalDestination(redirect),
            std::string(kV4Destination) + ":" + std::to_string(kUnservedPort));
  if (run.report.v6_connect != -1) {
    ASSERT_EQ(run.report.v6_connect, 0) << std::strerror(run.report.v6_connect);
    EXPECT_EQ(AcceptOriginalDestination(redirect),
              "[" + std::string(kV6Destination) + "]:" + std::to_string(kUnservedPort));
  }
  EXPECT_EQ(run.report.loopback_connect, 0) << std::strerror(run.report.loopback_connect);
  EXPECT_EQ(run.report.loopback_accepted, 1) << "the code's own loopback server was redirected";
  pollfd nothing_else{redirect, POLLIN, 0};
  EXPECT_EQ(::poll(&nothing_else, 1, 100), 0) << "the loopback connection reached the listener";
}

// The NAT makes the kernel track every flow of the namespace, in kernel memory no cgroup is
// charged for: the redirect's batch exempts all but TCP. Control: the redirect alone tracks
// every datagram, one entry each.
TEST(AllPortRedirect, OnlyTcpIsTrackedSoDatagramsCostTheKernelNoEntries) {
  CaptureRun tracking_all;
  StartChild(RedirectMode::kRequired, tracking_all, {}, Batch::kTrackingAll);
  if (tracking_all.report.setup_step == static_cast<int>(ChildStep::kNetworkRedirect) &&
      (tracking_all.report.setup_err == EOPNOTSUPP || tracking_all.report.setup_err == EPROTONOSUPPORT)) {
    GTEST_SKIP() << "the kernel lacks nf_tables NAT in network namespaces: "
                 << std::strerror(tracking_all.report.setup_err);
  }
  ASSERT_EQ(tracking_all.report.setup_step, -1) << std::strerror(tracking_all.report.setup_err);
  ASSERT_NE(tracking_all.report.udp_tracked, -1) << "no conntrack count in the namespace";
  EXPECT_GE(tracking_all.report.udp_tracked, kUdpFlood);

  CaptureRun run;
  StartChild(RedirectMode::kRequired, run);
  ASSERT_EQ(run.report.setup_step, -1) << std::strerror(run.report.setup_err);
  EXPECT_EQ(run.report.udp_tracked, 0);
  // TCP still is: the redirect works (its reverse NAT needs the entries).
  EXPECT_EQ(run.report.v4_connect, 0) << std::strerror(run.report.v4_connect);
  EXPECT_EQ(TrackingOf(run), static_cast<int>(Tracking::kTcpShortLived));

  // A kernel whose nf_tables lacks notrack refuses that transaction: the redirect alone is
  // installed then, and the run still captures every port.
  CaptureRun without_notrack;
  StartChild(RedirectMode::kRequired, without_notrack, {}, Batch::kNoNotrack);
  ASSERT_EQ(without_notrack.report.setup_step, -1) << std::strerror(without_notrack.report.setup_err);
  EXPECT_EQ(without_notrack.report.v4_connect, 0) << std::strerror(without_notrack.report.v4_connect);
  EXPECT_GE(without_notrack.report.udp_tracked, kUdpFlood);
  // And the runner learns it (the result's network.coverage.conntrack says "all_flows").
  EXPECT_EQ(TrackingOf(without_notrack), static_cast<int>(Tracking::kEverything));
}

// A TCP entry outlives its connection by its state's timeout (TIME_WAIT: 120 s), so code that
// connects and closes in a loop held an entry per connection for minutes. The redirect's
// transaction makes those states last seconds in the sandbox's namespace. Control: the same
// batch without the timeout object keeps every entry.
TEST(AllPortRedirect, ClosedTcpConnectionsLeaveTheConntrackTableInSeconds) {
  CaptureRun short_lived;
  StartChild(RedirectMode::kRequired, short_lived, {}, Batch::kShortLivedOnly, true);
  // Only the kernel's own "not supported" answers skip: an unknown object type or expression
  // (ENOENT), an operation or protocol it lacks. Any other refusal is a failure.
  const int err = short_lived.report.setup_err;
  if (short_lived.report.setup_step == static_cast<int>(ChildStep::kNetworkRedirect) &&
      (err == ENOENT || err == EOPNOTSUPP || err == EPROTONOSUPPORT)) {
    GTEST_SKIP() << "the kernel refuses nf_tables ct timeout objects (or NAT) in network "
                    "namespaces: " << std::strerror(err);
  }
  ASSERT_EQ(short_lived.report.setup_step, -1) << std::strerror(short_lived.report.setup_err);
  ASSERT_NE(short_lived.report.tcp_tracked, -1) << "no /proc/net/nf_conntrack in the namespace";
  EXPECT_GE(short_lived.report.tcp_tracked, kTcpFlood * 9 / 10);
  EXPECT_LE(short_lived.report.tcp_left, kTcpFlood / 10);
  // The redirect still works with the timeouts set.
  EXPECT_EQ(short_lived.report.v4_connect, 0) << std::strerror(short_lived.report.v4_connect);

  CaptureRun defaults;
  StartChild(RedirectMode::kRequired, defaults, {}, Batch::kNoTimeouts, true);
  ASSERT_EQ(defaults.report.setup_step, -1) << std::strerror(defaults.report.setup_err);
  EXPECT_GE(defaults.report.tcp_tracked, kTcpFlood * 9 / 10);
  EXPECT_GE(defaults.report.tcp_left, kTcpFlood * 9 / 10);
  // The fallback is reported (network.coverage.conntrack "tcp_default_timeouts").
  EXPECT_EQ(TrackingOf(short_lived), static_cast<int>(Tracking::kTcpShortLived));
  EXPECT_EQ(TrackingOf(defaults), static_cast<int>(Tracking::kTcp));
}

TEST(AllPortRedirect, WithoutTheKernelsNatPreferredFallsBackToListenersPerPortAndRequiredFails) {
  CaptureRun fallback;
  StartChild(RedirectMode::kPreferred, fallback, {kUnservedPort}, Batch::kRefused);
  ASSERT_EQ(fallback.report.setup_step, -1) << std::strerror(fallback.report.setup_err);
  int listener = -1;
  for (const auto& socket : fallback.sockets) {
    EXPECT_NE(socket.kind, CaptureKind::kRedirect);
    if (socket.kind == CaptureKind::kTcp && socket.port == kUnservedPort) listener = socket.fd;
  }
  ASSERT_NE(listener, -1) << "the per-port listener was handed over";
  ASSERT_EQ(fallback.report.v4_connect, 0) << std::strerror(fallback.report.v4_connect);
  // No NAT: the listener's own address is the destination (netd's fallback in OnAccepted).
  EXPECT_EQ(AcceptOriginalDestination(listener),
            "(no original destination; local " + std::string(kV4Destination) + ":" +
                std::to_string(kUnservedPort) + ")");

  CaptureRun required;
  StartChild(RedirectMode::kRequired, required, {kUnservedPort}, Batch::kRefused);
  EXPECT_EQ(required.report.setup_step, static_cast<int>(ChildStep::kNetworkRedirect));
  EXPECT_TRUE(required.sockets.empty()) << "a run that needs every port gets no capture at all";
}

}  // namespace
}  // namespace sbx
