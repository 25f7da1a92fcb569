// Routes, capture sockets and their hand-over; see network_capture.h for why.
#include "sandbox/net/network_capture.h"

#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/fd_passing.h"
#include "netpolicy/netd_protocol.h"
#include "sandbox/net/network_redirect.h"
#include "sandbox/net/network_udp_tap.h"

namespace sbx {
namespace {

// How each fd of a batch is described in the message body, one entry per fd, same order.
struct WireEntry {
  CaptureKind kind;
  uint8_t tracking;  // kRedirect: the Tracking its batch left; else 0
  uint16_t port;
};

constexpr int kLoopbackIndex = 1;  // "lo" is always interface 1 in a new network namespace
constexpr int kListenBacklog = 256;

// RTM_NEWROUTE "local <family default> dev lo table local", acknowledged. 0 or an errno.
int AddLocalDefaultRoute(int family) {
  int sock = ::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
  if (sock < 0) return errno;
  struct {
    nlmsghdr header;
    rtmsg route;
    rtattr oif_attr;
    int oif;
  } request{};
  request.header.nlmsg_len = sizeof(request);
  request.header.nlmsg_type = RTM_NEWROUTE;
  request.header.nlmsg_flags = NLM_F_REQUEST | NLM_F_CREATE | NLM_F_EXCL | NLM_F_ACK;
  request.header.nlmsg_seq = 1;
  request.route.rtm_family = static_cast<unsigned char>(family);
  request.route.rtm_dst_len = 0;  // the default: every destination
  request.route.rtm_table = RT_TABLE_LOCAL;
  request.route.rtm_protocol = RTPROT_BOOT;
  request.route.rtm_scope = RT_SCOPE_HOST;
  request.route.rtm_type = RTN_LOCAL;
  request.oif_attr.rta_len = RTA_LENGTH(sizeof(int));
  request.oif_attr.rta_type = RTA_OIF;
  request.oif = kLoopbackIndex;
  int err = 0;
  if (::send(sock, &request, sizeof(request), 0) != static_cast<ssize_t>(sizeof(request))) {
    err = errno;
  } else {
    alignas(nlmsghdr) char reply[512];
    ssize_t got = ::recv(sock, reply, sizeof(reply), 0);
    const auto* header = reinterpret_cast<const nlmsghdr*>(reply);
    if (got < 0) {
      err = errno;
    } else if (got < static_cast<ssize_t>(NLMSG_LENGTH(sizeof(nlmsgerr))) || header->nlmsg_type != NLMSG_ERROR) {
      err = EPROTO;
    } else {
      err = -reinterpret_cast<const nlmsgerr*>(NLMSG_DATA(header))->error;
    }
  }
  ::close(sock);
  return err;
}

// Binds `fd` (of `family`) to the wildcard address on `port`; 0 or -1 with errno set.
int BindAny(int fd, int family, uint16_t port) {
  if (family == AF_INET6) {
    sockaddr_in6 address{};
    address.sin6_family = AF_INET6;
    address.sin6_port = htons(port);
    return ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address));
  }
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  return ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address));
}

// `fd` when `ok` is 0, else closes it and returns -errno.
int KeepOrClose(int fd, int ok) {
  if (ok == 0) return fd;
  int err = errno;
  ::close(fd);
  return -err;
}

// A dual-stack TCP listener on `port` (IPv4 only when the kernel has no IPv6); -errno on failure.
int ListenTcp(uint16_t port) {
  int family = AF_INET6;
  int fd = ::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0 && errno == EAFNOSUPPORT) {  // IPv6 disabled in this kernel
    family = AF_INET;
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  }
  if (fd < 0) return -errno;
  int one = 1, zero = 0;
  int ok = ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (ok == 0 && family == AF_INET6) {
    // Dual-stack: IPv4 destinations arrive as v4-mapped addresses on the same socket.
    ok = ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
  }
  if (ok == 0) ok = BindAny(fd, family, port);
  if (ok == 0) ok = ::listen(fd, kListenBacklog);
  return KeepOrClose(fd, ok);
}

// The proxy_env listener: IPv4 loopback only, so that the proxy is reachable at the address
// the variables name and nowhere else (other destinations on its port are refused).
int ListenProxy(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -errno;
  int one = 1;
  int ok = ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (ok == 0) ok = ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address));
  if (ok == 0) ok = ::listen(fd, kListenBacklog);
  return KeepOrClose(fd, ok);
}

// UDP 53 of one family; the IPv6 one is V6ONLY so that the IPv4 socket gets IPv4 queries.
int BindDns(int family) {
  int fd = ::socket(family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -errno;
  int one = 1, ok = 0;
  if (family == AF_INET6) ok = ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
  if (ok == 0) ok = BindAny(fd, family, kDnsPort);
  return KeepOrClose(fd, ok);
}

static_assert(kNetdMaxFdsPerMessage <= kMaxFdsPerMessage);

// Sends fds[0..count) described by entries[0..count) in batches the kernel accepts.
int SendBatches(int sock, const int* fds, const WireEntry* entries, size_t count) {
  for (size_t start = 0; start < count; start += kNetdMaxFdsPerMessage) {
    size_t n = count - start < kNetdMaxFdsPerMessage ? count - start : kNetdMaxFdsPerMessage;
    if (SendWithFds(sock, entries + start, n * sizeof(WireEntry), fds + start, n) < 0) return errno;
  }
  return 0;
}

int Fail(ChildStep step, int err, ChildStep* failed_step) {
  *failed_step = step;
  return err;
}

}  // namespace

CapturePlan PrepareCapturePlan(const std::vector<uint16_t>& tcp_ports, RedirectMode redirect,
                               uint16_t proxy_port, int send_fd) {
  CapturePlan plan;
  plan.enabled = true;
  plan.tcp_ports = tcp_ports;
  plan.redirect = redirect;
  if (redirect != RedirectMode::kOff) {
    plan.redirect_both = BuildRedirectBatches(true, kRedirectCapturePort);
    plan.redirect_v4_only = BuildRedirectBatches(false, kRedirectCapturePort);
  }
  plan.proxy_port = proxy_port;
  plan.send_fd = send_fd;
  plan.fds.assign(plan.SocketCount(), -1);
  return plan;
}

int SetUpCaptureInChild(const CapturePlan& plan, ChildStep* failed_step) {
  if (int err = AddLocalDefaultRoute(AF_INET)) return Fail(ChildStep::kNetworkRoutes, err, failed_step);
  // Without the IPv6 route (IPv6 disabled) IPv6 destinations are unreachable, which is as
  // closed as captured; with it they reach the dual-stack listeners and are logged.
  const bool have_v6 = AddLocalDefaultRoute(AF_INET6) == 0;
  bool redirected = false;
  Tracking tracking = Tracking::kTcpShortLived;
  if (plan.redirect != RedirectMode::kOff) {
    // Listeners per port are the fallback only when the kernel refused the batch, which is
    // one transaction: nothing of it is installed then. Unknown state is no run.
    const NetfilterOutcome installed =
        InstallRedirect(have_v6 ? plan.redirect_both : plan.redirect_v4_only);
    const bool fall_back = installed.rejected && plan.redirect == RedirectMode::kPreferred;
    if (installed.err != 0 && !fall_back) {
      return Fail(ChildStep::kNetworkRedirect, installed.err, failed_step);
    }
    redirected = installed.err == 0;
    tracking = installed.tracking;
  }
  // The entries live on this stack: at most the ports' count (bounded by the policy) + 4.
  constexpr size_t kMaxEntries = 1024;
  if (plan.SocketCount() > kMaxEntries) return Fail(ChildStep::kNetworkCapture, E2BIG, failed_step);
  WireEntry entries[kMaxEntries];
  size_t count = 0;
  int err = 0;
  // Keeps a socket and its entry; a negative errno instead of a socket is the first error.
  auto keep = [&](int fd, CaptureKind kind, uint16_t port) {
    if (fd < 0) {
      err = -fd;
      return false;
    }
    plan.fds[count] = fd;
    entries[count++] = {kind, 0, port};
    return true;
  };
  if (!redirected) {
    for (uint16_t port : plan.tcp_ports) {
      if (!keep(ListenTcp(port), CaptureKind::kTcp, port)) break;
    }
  } else if (keep(ListenTcp(kRedirectCapturePort), CaptureKind::kRedirect, kRedirectCapturePort)) {
    entries[count - 1].tracking = static_cast<uint8_t>(tracking);
    // DNS over TCP to the resolver resolv.conf names, 127.0.0.1, which the redirect leaves
    // alone (other addresses' port 53 reaches netd through the redirect; without it, port 53
    // is one of tcp_ports).
    keep(ListenTcp(kDnsPort), CaptureKind::kTcp, kDnsPort);
  }
  if (err == 0 && plan.proxy_port != 0) {
    keep(ListenProxy(plan.proxy_port), CaptureKind::kProxy, plan.proxy_port);
  }
  for (int family : {AF_INET, AF_INET6}) {
    if (err != 0 || (family == AF_INET6 && !have_v6)) break;
    keep(BindDns(family), CaptureKind::kUdp, kDnsPort);
  }
  for (int family : {AF_INET, AF_INET6}) {
    if (err != 0 || (family == AF_INET6 && !have_v6)) break;
    keep(OpenUdpTapInChild(family), CaptureKind::kUdpTap, 0);
  }
  if (err == 0) err = SendBatches(plan.send_fd, plan.fds.data(), entries, count);
  for (size_t i = 0; i < count; ++i) ::close(plan.fds[i]);
  ::close(plan.send_fd);  // EOF tells the runner the list is complete
  return err == 0 ? 0 : Fail(ChildStep::kNetworkCapture, err, failed_step);
}

std::vector<CapturedSocket> ReceiveCapturedSockets(const CapturePlan& plan, int receive_fd,
                                                   int timeout_ms) {
  std::vector<CapturedSocket> sockets;
  bool complete = false;
  while (!complete) {
    pollfd waiting{receive_fd, POLLIN, 0};
    int ready = ::poll(&waiting, 1, timeout_ms);
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) break;
    WireEntry entries[kNetdMaxFdsPerMessage];
    alignas(cmsghdr) char control[CMSG_SPACE(kNetdMaxFdsPerMessage * sizeof(int))];
    iovec iov{entries, sizeof(entries)};
    msghdr message{};
    message.msg_iov = &iov;
    message.msg_iovlen = 1;
    message.msg_control = control;
    message.msg_controllen = sizeof(control);
    ssize_t got = ::recvmsg(receive_fd, &message, MSG_CMSG_CLOEXEC);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      complete = got == 0;  // EOF: the child sent everything it had (or nothing: it failed)
      break;
    }
    size_t described = static_cast<size_t>(got) / sizeof(WireEntry);
    size_t received = 0;
    for (cmsghdr* header = CMSG_FIRSTHDR(&message); header != nullptr; header = CMSG_NXTHDR(&message, header)) {
      if (header->cmsg_level != SOL_SOCKET || header->cmsg_type != SCM_RIGHTS) continue;
      size_t n = (header->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      const int* fds = reinterpret_cast<const int*>(CMSG_DATA(header));
      for (size_t i = 0; i < n; ++i, ++received) {
        if (received < described) {
          const WireEntry& entry = entries[received];
          sockets.push_back(
              {entry.kind, entry.port, fds[i], static_cast<Tracking>(entry.tracking)});
        } else {
          ::close(fds[i]);  // more fds than descriptions: never from our child
        }
      }
    }
    if (received != described || (message.msg_flags & MSG_CTRUNC) != 0) break;
  }
  // Anything short of the complete, expected set is no capture at all: the run must not start
  // with a port silently uncaptured.
  size_t tcp = 0, tcp_dns = 0, redirect = 0, proxy = 0, udp_dns = 0, udp_tap = 0, unknown = 0;
  for (const auto& socket : sockets) {
    switch (socket.kind) {
      case CaptureKind::kTcp:
        ++tcp;
        if (socket.port == kDnsPort) ++tcp_dns;
        break;
      case CaptureKind::kRedirect:
        ++redirect;
        if (static_cast<uint8_t>(socket.tracking) > static_cast<uint8_t>(Tracking::kEverything)) {
          ++unknown;
        }
        break;
      case CaptureKind::kProxy: ++proxy; break;
      case CaptureKind::kUdp: ++udp_dns; break;
      case CaptureKind::kUdpTap: ++udp_tap; break;
      default: ++unknown;  // a kind byte our child never sends
    }
  }
  // Either mode, whole: the redirect and DNS over TCP's listener, or (when the plan allows it)
  // every listed port.
  const bool redirect_set =
      redirect == 1 && tcp == 1 && tcp_dns == 1 && plan.redirect != RedirectMode::kOff;
  const bool per_port_set = redirect == 0 && tcp == plan.tcp_ports.size() &&
                            plan.redirect != RedirectMode::kRequired;
  const size_t expected_proxy = plan.proxy_port != 0 ? 1 : 0;
  if (!complete || unknown != 0 || !(redirect_set || per_port_set) || proxy != expected_proxy ||
      udp_dns < 1 || udp_dns > 2 || udp_tap != udp_dns) {  // UDP 53 and a tap per family
    for (const auto& socket : sockets) ::close(socket.fd);
    sockets.clear();
  }
  return sockets;
}

}  // namespace sbx
