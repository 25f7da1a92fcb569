// The all-port capture's nf_tables batch and its installation; see network_redirect.h.
#include "sandbox/net/network_redirect.h"

#include <arpa/inet.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_cttimeout.h>
#include <linux/netlink.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <initializer_list>
#include <string_view>

namespace sbx {
namespace {

constexpr char kTable[] = "sbx_capture";
constexpr char kChain[] = "redirect";
constexpr char kUntrackedChain[] = "untracked";
// The NAT priority of the output hook ("dstnat"), as `nft` names it.
constexpr int32_t kNatOutputPriority = -100;
// "raw": before conntrack (-200) sees the packet, so notrack can still spare it an entry.
constexpr int32_t kRawPriority = -300;
constexpr char kTcpTimeoutObject[] = "tcp_short_lived";
// Seconds a TCP entry of the sandbox's namespace lives in the states a finished or failed
// connection ends in (the kernel's defaults: 120, 120, 10). On loopback a SYN is answered in
// microseconds, and a retried SYN after expiry simply makes a new entry, NAT included.
constexpr uint32_t kSynSentSeconds = 5;
constexpr uint32_t kTimeWaitSeconds = 2;
constexpr uint32_t kCloseSeconds = 2;

// Appends netlink messages and (nested) attributes to one buffer, patching lengths as each
// ends. Runner side only: it allocates.
class NetlinkBatch {
 public:
  void BeginMessage(uint16_t type, uint16_t flags, uint8_t family, uint16_t res_id = 0) {
    message_start_ = bytes_.size();
    nlmsghdr header{};
    header.nlmsg_type = type;
    header.nlmsg_flags = static_cast<uint16_t>(NLM_F_REQUEST | flags);
    header.nlmsg_seq = ++sequence_;
    if (flags & NLM_F_ACK) ++acks_;
    Append(&header, sizeof(header));
    nfgenmsg body{};
    body.nfgen_family = family;
    body.version = NFNETLINK_V0;
    body.res_id = htons(res_id);
    Append(&body, sizeof(body));
  }
  void EndMessage() { PatchLength32(message_start_); }

  void Attribute(uint16_t type, const void* data, size_t size) {
    nlattr header{};
    header.nla_len = static_cast<uint16_t>(NLA_HDRLEN + size);
    header.nla_type = type;
    Append(&header, sizeof(header));
    Append(data, size);
    Pad();
  }
  void String(uint16_t type, std::string_view text) {
    std::vector<uint8_t> terminated(text.begin(), text.end());
    terminated.push_back(0);
    Attribute(type, terminated.data(), terminated.size());
  }
  void U32(uint16_t type, uint32_t host_order) {
    const uint32_t value = htonl(host_order);
    Attribute(type, &value, sizeof(value));
  }
  size_t BeginNested(uint16_t type) {
    const size_t start = bytes_.size();
    nlattr header{};
    header.nla_type = static_cast<uint16_t>(type | NLA_F_NESTED);
    Append(&header, sizeof(header));
    return start;
  }
  void EndNested(size_t start) {
    const auto length = static_cast<uint16_t>(bytes_.size() - start);
    std::memcpy(bytes_.data() + start, &length, sizeof(length));
  }

  NetfilterBatch Take() { return {std::move(bytes_), acks_}; }

 private:
  void Append(const void* data, size_t size) {
    const auto* from = static_cast<const uint8_t*>(data);
    bytes_.insert(bytes_.end(), from, from + size);
  }
  void Pad() { bytes_.resize(NLMSG_ALIGN(bytes_.size()), 0); }
  void PatchLength32(size_t start) {
    const auto length = static_cast<uint32_t>(bytes_.size() - start);
    std::memcpy(bytes_.data() + start, &length, sizeof(length));
  }

  std::vector<uint8_t> bytes_;
  size_t message_start_ = 0;
  uint32_t sequence_ = 0;
  int acks_ = 0;
};

// One expression of a rule: {name, data{...}} inside NFTA_RULE_EXPRESSIONS.
template <typename Fill>
void Expression(NetlinkBatch& batch, std::string_view name, Fill fill) {
  const size_t element = batch.BeginNested(NFTA_LIST_ELEM);
  batch.String(NFTA_EXPR_NAME, name);
  const size_t data = batch.BeginNested(NFTA_EXPR_DATA);
  fill();
  batch.EndNested(data);
  batch.EndNested(element);
}

// An NFTA_DATA_VALUE nested under `type` (cmp's and immediate's constants).
void DataValue(NetlinkBatch& batch, uint16_t type, const void* value, size_t size) {
  const size_t nested = batch.BeginNested(type);
  batch.Attribute(NFTA_DATA_VALUE, value, size);
  batch.EndNested(nested);
}

// payload (network header, offset, size) -> register 1; then register 1 `op` value.
void CompareNetworkHeader(NetlinkBatch& batch, uint32_t offset, const void* value, size_t size,
                          uint32_t op) {
  Expression(batch, "payload", [&] {
    batch.U32(NFTA_PAYLOAD_DREG, NFT_REG_1);
    batch.U32(NFTA_PAYLOAD_BASE, NFT_PAYLOAD_NETWORK_HEADER);
    batch.U32(NFTA_PAYLOAD_OFFSET, offset);
    batch.U32(NFTA_PAYLOAD_LEN, static_cast<uint32_t>(size));
  });
  Expression(batch, "cmp", [&] {
    batch.U32(NFTA_CMP_SREG, NFT_REG_1);
    batch.U32(NFTA_CMP_OP, op);
    DataValue(batch, NFTA_CMP_DATA, value, size);
  });
}

uint16_t TablesMessage(uint16_t message) {
  return static_cast<uint16_t>(NFNL_SUBSYS_NFTABLES << 8 | message);
}

// A base chain of kTable on the output hook, accepting by default.
void NewOutputChain(NetlinkBatch& batch, uint8_t nf_family, const char* name, const char* type,
                    int32_t priority) {
  batch.BeginMessage(TablesMessage(NFT_MSG_NEWCHAIN), NLM_F_CREATE | NLM_F_ACK, nf_family);
  batch.String(NFTA_CHAIN_TABLE, kTable);
  batch.String(NFTA_CHAIN_NAME, name);
  const size_t hook = batch.BeginNested(NFTA_CHAIN_HOOK);
  batch.U32(NFTA_HOOK_HOOKNUM, NF_INET_LOCAL_OUT);
  batch.U32(NFTA_HOOK_PRIORITY, static_cast<uint32_t>(priority));
  batch.EndNested(hook);
  batch.U32(NFTA_CHAIN_POLICY, NF_ACCEPT);
  batch.String(NFTA_CHAIN_TYPE, type);
  batch.EndMessage();
}

// Opens a rule appended to `chain`; the caller adds NFTA_RULE_EXPRESSIONS and ends it.
void BeginRule(NetlinkBatch& batch, uint8_t nf_family, const char* chain) {
  batch.BeginMessage(TablesMessage(NFT_MSG_NEWRULE), NLM_F_CREATE | NLM_F_APPEND | NLM_F_ACK,
                     nf_family);
  batch.String(NFTA_RULE_TABLE, kTable);
  batch.String(NFTA_RULE_CHAIN, chain);
}

// meta l4proto `op` protocol
void CompareL4Protocol(NetlinkBatch& batch, uint8_t protocol, uint32_t op) {
  Expression(batch, "meta", [&] {
    batch.U32(NFTA_META_DREG, NFT_REG_1);
    batch.U32(NFTA_META_KEY, NFT_META_L4PROTO);
  });
  Expression(batch, "cmp", [&] {
    batch.U32(NFTA_CMP_SREG, NFT_REG_1);
    batch.U32(NFTA_CMP_OP, op);
    DataValue(batch, NFTA_CMP_DATA, &protocol, sizeof(protocol));
  });
}

// daddr not loopback: IPv4's first byte is not 127 (offset 16), IPv6's address is not ::1
// (offset 24).
void ExcludeLoopbackDestination(NetlinkBatch& batch, int family) {
  if (family == AF_INET6) {
    const in6_addr loopback = IN6ADDR_LOOPBACK_INIT;
    CompareNetworkHeader(batch, 24, &loopback, sizeof(loopback), NFT_CMP_NEQ);
  } else {
    const uint8_t loopback_net = 127;
    CompareNetworkHeader(batch, 16, &loopback_net, sizeof(loopback_net), NFT_CMP_NEQ);
  }
}

// A raw-priority chain of kTable whose rule exempts all but TCP from conntrack:
// `meta l4proto != tcp notrack`. (Loopback TCP stays tracked: a redirected connection's
// replies go to ::1 on IPv6, and untracked they would miss the redirect's reverse NAT.)
void AppendUntracked(NetlinkBatch& batch, int family) {
  const uint8_t nf_family = family == AF_INET6 ? NFPROTO_IPV6 : NFPROTO_IPV4;
  NewOutputChain(batch, nf_family, kUntrackedChain, "filter", kRawPriority);
  BeginRule(batch, nf_family, kUntrackedChain);
  const size_t expressions = batch.BeginNested(NFTA_RULE_EXPRESSIONS);
  CompareL4Protocol(batch, IPPROTO_TCP, NFT_CMP_NEQ);
  Expression(batch, "notrack", [] {});
  batch.EndNested(expressions);
  batch.EndMessage();
}

// The ct timeout object of kTable: TCP's closed states short-lived, the others the defaults.
void AppendTcpTimeoutObject(NetlinkBatch& batch, uint8_t nf_family) {
  batch.BeginMessage(TablesMessage(NFT_MSG_NEWOBJ), NLM_F_CREATE | NLM_F_ACK, nf_family);
  batch.String(NFTA_OBJ_TABLE, kTable);
  batch.String(NFTA_OBJ_NAME, kTcpTimeoutObject);
  batch.U32(NFTA_OBJ_TYPE, NFT_OBJECT_CT_TIMEOUT);
  const size_t data = batch.BeginNested(NFTA_OBJ_DATA);
  const uint8_t tcp = IPPROTO_TCP;
  batch.Attribute(NFTA_CT_TIMEOUT_L4PROTO, &tcp, sizeof(tcp));
  const size_t timeouts = batch.BeginNested(NFTA_CT_TIMEOUT_DATA);
  batch.U32(CTA_TIMEOUT_TCP_SYN_SENT, kSynSentSeconds);
  batch.U32(CTA_TIMEOUT_TCP_TIME_WAIT, kTimeWaitSeconds);
  batch.U32(CTA_TIMEOUT_TCP_CLOSE, kCloseSeconds);
  batch.EndNested(timeouts);
  batch.EndNested(data);
  batch.EndMessage();
}

// `meta l4proto tcp ct timeout set "tcp_short_lived"` in the nat chain, which sees the first
// packet of every connection once conntrack has made its (still unconfirmed) entry.
void AppendSetTcpTimeouts(NetlinkBatch& batch, uint8_t nf_family) {
  BeginRule(batch, nf_family, kChain);
  const size_t expressions = batch.BeginNested(NFTA_RULE_EXPRESSIONS);
  CompareL4Protocol(batch, IPPROTO_TCP, NFT_CMP_EQ);
  Expression(batch, "objref", [&] {
    batch.U32(NFTA_OBJREF_IMM_TYPE, NFT_OBJECT_CT_TIMEOUT);
    batch.String(NFTA_OBJREF_IMM_NAME, kTcpTimeoutObject);
  });
  batch.EndNested(expressions);
  batch.EndMessage();
}

// The table, nat chain (output hook) and rule of one family, appended to `batch`; with
// `short_lived_tcp` the timeout object and its rule come first (the redirect ends the chain).
void AppendRedirect(NetlinkBatch& batch, int family, uint16_t to_port, bool short_lived_tcp) {
  const uint8_t nf_family = family == AF_INET6 ? NFPROTO_IPV6 : NFPROTO_IPV4;
  batch.BeginMessage(TablesMessage(NFT_MSG_NEWTABLE), NLM_F_CREATE | NLM_F_ACK, nf_family);
  batch.String(NFTA_TABLE_NAME, kTable);
  batch.EndMessage();

  NewOutputChain(batch, nf_family, kChain, "nat", kNatOutputPriority);
  if (short_lived_tcp) {
    AppendTcpTimeoutObject(batch, nf_family);
    AppendSetTcpTimeouts(batch, nf_family);
  }

  BeginRule(batch, nf_family, kChain);
  const size_t expressions = batch.BeginNested(NFTA_RULE_EXPRESSIONS);
  CompareL4Protocol(batch, IPPROTO_TCP, NFT_CMP_EQ);
  ExcludeLoopbackDestination(batch, family);
  // redirect to :to_port (the port from register 1; the address becomes loopback)
  const uint16_t port = htons(to_port);
  Expression(batch, "immediate", [&] {
    batch.U32(NFTA_IMMEDIATE_DREG, NFT_REG_1);
    DataValue(batch, NFTA_IMMEDIATE_DATA, &port, sizeof(port));
  });
  Expression(batch, "redir", [&] { batch.U32(NFTA_REDIR_REG_PROTO_MIN, NFT_REG_1); });
  batch.EndNested(expressions);
  batch.EndMessage();
}

}  // namespace

NetfilterBatch BuildRedirectBatch(bool with_ipv6, uint16_t to_port, Tracking tracking) {
  NetlinkBatch batch;
  batch.BeginMessage(NFNL_MSG_BATCH_BEGIN, 0, AF_UNSPEC, NFNL_SUBSYS_NFTABLES);
  batch.EndMessage();
  for (int family : {AF_INET, AF_INET6}) {
    if (family == AF_INET6 && !with_ipv6) break;
    AppendRedirect(batch, family, to_port, tracking == Tracking::kTcpShortLived);
    if (tracking != Tracking::kEverything) AppendUntracked(batch, family);
  }
  batch.BeginMessage(NFNL_MSG_BATCH_END, 0, AF_UNSPEC, NFNL_SUBSYS_NFTABLES);
  batch.EndMessage();
  return batch.Take();
}

RedirectBatches BuildRedirectBatches(bool with_ipv6, uint16_t to_port) {
  return {BuildRedirectBatch(with_ipv6, to_port, Tracking::kTcpShortLived),
          BuildRedirectBatch(with_ipv6, to_port, Tracking::kTcp),
          BuildRedirectBatch(with_ipv6, to_port, Tracking::kEverything)};
}

namespace {

// Sends `batch` on a NETLINK_NETFILTER socket and checks that all its acks came back without
// error. Async-signal-safe.
NetfilterOutcome InstallNetfilterBatch(const NetfilterBatch& batch) {
  int sock = ::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_NETFILTER);
  if (sock < 0) return {errno, true};  // no nfnetlink: nothing can have been installed
  NetfilterOutcome outcome;
  if (::send(sock, batch.bytes.data(), batch.bytes.size(), 0) != static_cast<ssize_t>(batch.bytes.size())) {
    outcome.err = errno;
  }
  // The kernel handles the batch inside send(): every answer is queued when it returns, so
  // an answer missing now is missing for good (MSG_DONTWAIT, never a hang).
  int acks = batch.acks;
  while (outcome.err == 0 && acks > 0) {
    alignas(nlmsghdr) char reply[4096];
    const ssize_t got = ::recv(sock, reply, sizeof(reply), MSG_DONTWAIT);
    if (got < 0) {
      outcome.err = errno == EAGAIN ? EPROTO : errno;
      break;
    }
    int left = static_cast<int>(got);  // the NLMSG_* macros' arithmetic is on int
    for (auto* header = reinterpret_cast<nlmsghdr*>(reply);
         outcome.err == 0 && NLMSG_OK(header, left); header = NLMSG_NEXT(header, left)) {
      if (header->nlmsg_type != NLMSG_ERROR ||
          header->nlmsg_len < NLMSG_LENGTH(sizeof(nlmsgerr))) {
        outcome.err = EPROTO;
      } else if (const int error = reinterpret_cast<const nlmsgerr*>(NLMSG_DATA(header))->error;
                 error != 0) {
        // nf_tables aborts the whole batch when one message fails: nothing is installed.
        outcome.err = -error;
        outcome.rejected = true;
      } else {
        --acks;
      }
    }
  }
  ::close(sock);
  return outcome;
}

}  // namespace

NetfilterOutcome InstallRedirect(const RedirectBatches& batches) {
  NetfilterOutcome outcome = InstallNetfilterBatch(batches.short_lived);
  if (outcome.rejected) {
    outcome = InstallNetfilterBatch(batches.untracking);
    outcome.tracking = Tracking::kTcp;
  }
  if (outcome.rejected) {
    outcome = InstallNetfilterBatch(batches.redirect_only);
    outcome.tracking = Tracking::kEverything;
  }
  return outcome;
}

}  // namespace sbx
