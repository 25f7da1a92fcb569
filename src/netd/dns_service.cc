// Serves one UDP :53 socket with recvmsg/sendmsg, keeping the query's destination address.
#include "src/netd/dns_service.h"

#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "src/netd/dns_message.h"
#include "src/netd/dns_responder.h"

namespace sbx::netd {
namespace {

// Queries answered per wakeup before yielding to the other sockets.
constexpr int kQueriesPerWakeup = 64;

union Control {
  cmsghdr align;
  char bytes[CMSG_SPACE(sizeof(in6_pktinfo))];
};

// Writes `source` as the one control message of `reply`.
template <typename PacketInfo>
void SetSource(int level, int type, const PacketInfo& source, Control& reply_control,
               msghdr& reply) {
  std::memset(&reply_control, 0, sizeof(reply_control));
  reply.msg_control = reply_control.bytes;
  reply.msg_controllen = CMSG_SPACE(sizeof(source));
  cmsghdr* out = CMSG_FIRSTHDR(&reply);
  out->cmsg_level = level;
  out->cmsg_type = type;
  out->cmsg_len = CMSG_LEN(sizeof(source));
  std::memcpy(CMSG_DATA(out), &source, sizeof(source));
}

// The destination address of the received datagram, as a reply's source.
bool TakeDestination(msghdr& message, bool v6, Control& reply_control, msghdr& reply) {
  for (cmsghdr* cmsg = CMSG_FIRSTHDR(&message); cmsg != nullptr;
       cmsg = CMSG_NXTHDR(&message, cmsg)) {
    if (!v6 && cmsg->cmsg_level == IPPROTO_IP && cmsg->cmsg_type == IP_PKTINFO) {
      in_pktinfo received;
      std::memcpy(&received, CMSG_DATA(cmsg), sizeof(received));
      in_pktinfo source{};
      source.ipi_spec_dst = received.ipi_addr;
      SetSource(IPPROTO_IP, IP_PKTINFO, source, reply_control, reply);
      return true;
    }
    if (v6 && cmsg->cmsg_level == IPPROTO_IPV6 && cmsg->cmsg_type == IPV6_PKTINFO) {
      in6_pktinfo received;
      std::memcpy(&received, CMSG_DATA(cmsg), sizeof(received));
      in6_pktinfo source{};
      source.ipi6_addr = received.ipi6_addr;
      SetSource(IPPROTO_IPV6, IPV6_PKTINFO, source, reply_control, reply);
      return true;
    }
  }
  return false;
}

}  // namespace

std::vector<uint8_t> AnswerAndRecord(std::span<const uint8_t> query, NetdContext& context) {
  DnsOutcome outcome = AnswerDnsQuery(query, context.policy, context.pool);
  if (outcome.record) {
    context.counters.CountDnsQuery();
    if (outcome.record->allowed) {
      context.counters.CountAllowed();
    } else {
      context.counters.CountDenied(outcome.record->qname);
    }
    context.log.LogDns(*outcome.record);
  }
  return std::move(outcome.reply);
}

Result<void> DnsService::Start(UniqueFd fd) {
  sockaddr_storage local{};
  socklen_t length = sizeof(local);
  if (getsockname(fd.get(), reinterpret_cast<sockaddr*>(&local), &length) != 0) {
    return SysError(ErrorCode::kInvalidInput, "dns: getsockname");
  }
  v6_ = local.ss_family == AF_INET6;
  const int one = 1;
  const int rc = v6_ ? setsockopt(fd.get(), IPPROTO_IPV6, IPV6_RECVPKTINFO, &one, sizeof(one))
                     : setsockopt(fd.get(), IPPROTO_IP, IP_PKTINFO, &one, sizeof(one));
  if (rc != 0) return SysError(ErrorCode::kSetupFailed, "dns: setsockopt(PKTINFO)");
  // An IPv6 source given by IPV6_PKTINFO must be an interface's address (EINVAL otherwise),
  // and a local route does not make one; IP_FREEBIND (shared by both families) lifts that
  // check. IPv4 accepts any address its local route covers.
  if (v6_ && setsockopt(fd.get(), IPPROTO_IP, IP_FREEBIND, &one, sizeof(one)) != 0) {
    return SysError(ErrorCode::kSetupFailed, "dns: setsockopt(IP_FREEBIND)");
  }
  boost::system::error_code ec;
  socket_.assign(v6_ ? boost::asio::ip::udp::v6() : boost::asio::ip::udp::v4(), fd.get(), ec);
  if (ec) return MakeError(ErrorCode::kSetupFailed, "dns: " + ec.message());
  fd.release();
  socket_.non_blocking(true, ec);
  WaitForQueries();
  return Ok{};
}

void DnsService::Stop() {
  boost::system::error_code ec;
  socket_.close(ec);
}

void DnsService::WaitForQueries() {
  socket_.async_wait(boost::asio::socket_base::wait_read, [this](boost::system::error_code ec) {
    if (ec) return;  // closed by Stop()
    AnswerPending();
    WaitForQueries();
  });
}

void DnsService::AnswerPending() {
  uint8_t packet[kDnsMaxQuerySize + 1];
  for (int i = 0; i < kQueriesPerWakeup; ++i) {
    sockaddr_storage peer{};
    iovec iov{packet, sizeof(packet)};
    Control control;
    msghdr message{};
    message.msg_name = &peer;
    message.msg_namelen = sizeof(peer);
    message.msg_iov = &iov;
    message.msg_iovlen = 1;
    message.msg_control = control.bytes;
    message.msg_controllen = sizeof(control.bytes);
    const ssize_t size = recvmsg(socket_.native_handle(), &message, MSG_DONTWAIT);
    if (size < 0) return;  // EAGAIN: all read; other errors (ICMP) are the client's
    // A truncated datagram is larger than any stub query: not answered.
    if (message.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) continue;
    std::vector<uint8_t> answer = AnswerAndRecord({packet, static_cast<size_t>(size)}, context_);
    if (answer.empty()) continue;
    Control reply_control;
    msghdr reply{};
    iovec reply_iov{answer.data(), answer.size()};
    reply.msg_name = &peer;
    reply.msg_namelen = message.msg_namelen;
    reply.msg_iov = &reply_iov;
    reply.msg_iovlen = 1;
    if (!TakeDestination(message, v6_, reply_control, reply)) continue;
    // Best effort, like any DNS server: a full socket buffer drops the answer, the client
    // retries.
    (void)sendmsg(socket_.native_handle(), &reply, MSG_DONTWAIT | MSG_NOSIGNAL);
  }
}

}  // namespace sbx::netd
