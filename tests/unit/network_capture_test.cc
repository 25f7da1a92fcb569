// The runner's side of the capture hand-over: it takes a whole set of one of the plan's modes
// (the redirect listener alone, or every listed port) and nothing else, so that a run never
// starts with ports silently uncaptured.
#include "sandbox/net/network_capture.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <vector>

namespace sbx {
namespace {

// What the child sends per fd (network_capture.cc's wire entry).
struct Entry {
  CaptureKind kind;
  uint8_t reserved;
  uint16_t port;
};

// Sends `entries`, each with a fresh fd, in one message, then EOF; returns what the runner
// kept (closing the fds).
size_t Receive(const CapturePlan& plan, const std::vector<Entry>& entries) {
  int pair[2];
  EXPECT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair), 0);
  std::vector<int> fds;
  for (size_t i = 0; i < entries.size(); ++i) fds.push_back(::dup(STDERR_FILENO));
  iovec iov{const_cast<Entry*>(entries.data()), entries.size() * sizeof(Entry)};
  alignas(cmsghdr) char control[CMSG_SPACE(16 * sizeof(int))];
  msghdr message{};
  message.msg_iov = &iov;
  message.msg_iovlen = 1;
  message.msg_control = control;
  message.msg_controllen = CMSG_SPACE(fds.size() * sizeof(int));
  cmsghdr* header = CMSG_FIRSTHDR(&message);
  header->cmsg_level = SOL_SOCKET;
  header->cmsg_type = SCM_RIGHTS;
  header->cmsg_len = CMSG_LEN(fds.size() * sizeof(int));
  std::memcpy(CMSG_DATA(header), fds.data(), fds.size() * sizeof(int));
  EXPECT_GT(::sendmsg(pair[1], &message, 0), 0);
  for (int fd : fds) ::close(fd);
  ::close(pair[1]);  // EOF: the list is complete
  auto sockets = ReceiveCapturedSockets(plan, pair[0], 1000);
  ::close(pair[0]);
  for (const auto& socket : sockets) ::close(socket.fd);
  return sockets.size();
}

TEST(CaptureHandOver, TakesOnlyAWholeSetOfOneOfThePlansModes) {
  const std::vector<uint16_t> ports = {53, 80, 443};
  const Entry redirect{CaptureKind::kRedirect, 0, 1};
  const Entry tcp_dns{CaptureKind::kTcp, 0, 53};
  const Entry http{CaptureKind::kTcp, 0, 80}, https{CaptureKind::kTcp, 0, 443};
  const Entry dns{CaptureKind::kUdp, 0, 53};
  const Entry tap{CaptureKind::kUdpTap, 0, 0};
  const CapturePlan preferred = PrepareCapturePlan(ports, RedirectMode::kPreferred, 0, -1);
  const CapturePlan required = PrepareCapturePlan(ports, RedirectMode::kRequired, 0, -1);
  const CapturePlan off = PrepareCapturePlan(ports, RedirectMode::kOff, 0, -1);

  EXPECT_EQ(Receive(preferred, {redirect, tcp_dns, dns, tap}), 4u) << "the redirect";
  EXPECT_EQ(Receive(preferred, {tcp_dns, http, https, dns, tap}), 5u) << "the fallback";
  EXPECT_EQ(Receive(required, {redirect, tcp_dns, dns, tap}), 4u);
  EXPECT_EQ(Receive(off, {tcp_dns, http, https, dns, tap}), 5u);

  EXPECT_EQ(Receive(preferred, {redirect, dns, tap}), 0u) << "the redirect without DNS over TCP";
  EXPECT_EQ(Receive(preferred, {redirect, http, dns, tap}), 0u) << "a mixed set";
  EXPECT_EQ(Receive(preferred, {redirect, redirect, tcp_dns, dns, tap}), 0u) << "two redirect listeners";
  EXPECT_EQ(Receive(preferred, {tcp_dns, http, dns, tap}), 0u) << "a port missing";
  EXPECT_EQ(Receive(required, {tcp_dns, http, https, dns, tap}), 0u)
      << "ports where only the redirect will do";
  EXPECT_EQ(Receive(off, {redirect, tcp_dns, dns, tap}), 0u) << "a redirect the plan did not ask for";
  EXPECT_EQ(Receive(preferred, {redirect, tcp_dns, tap}), 0u) << "no DNS";
  EXPECT_EQ(Receive(preferred, {redirect, tcp_dns, dns}), 0u) << "no UDP tap";
  EXPECT_EQ(Receive(preferred, {redirect, tcp_dns, dns, dns, tap, tap}), 6u) << "IPv6 too";
  EXPECT_EQ(Receive(preferred, {redirect, tcp_dns, dns, dns, tap}), 0u) << "IPv6 without its tap";
  EXPECT_EQ(Receive(preferred, {redirect, tcp_dns, dns, tap, tap}), 0u) << "a tap without its DNS";
  EXPECT_EQ(Receive(preferred, {redirect, tcp_dns, dns, dns, tap, tap, tap}), 0u) << "three UDP taps";
  EXPECT_EQ(Receive(preferred, {{static_cast<CaptureKind>(9), 0, 1}, redirect, tcp_dns, dns, tap}), 0u)
      << "an unknown kind";
}

}  // namespace
}  // namespace sbx
