// The UDP audit taps' sockets and their filters; see network_udp_tap.h.
#include "sandbox/net/network_udp_tap.h"

#include <linux/filter.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>
#include <iterator>

#include <unistd.h>

namespace sbx {
namespace {

#define LOAD(size, k) BPF_STMT(BPF_LD | (size) | BPF_ABS, (k))
#define JEQ(k, t, f) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (k), (t), (f))
#define RET(k) BPF_STMT(BPF_RET | BPF_K, (k))

// Jump offsets count the instructions they skip.

// IPv4: the data starts at the IP header. The first fragment only, destination not 127/8,
// neither port 53; keeps the IP header (at most 60 bytes) and the UDP header.
const sock_filter kFilter4[] = {
    /* 0 */ LOAD(BPF_H, 6),
    /* 1 */ BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, 0x1fff, 8, 0),  // to 10: drop
    /* 2 */ LOAD(BPF_B, 16),
    /* 3 */ JEQ(127, 6, 0),
    /* 4 */ BPF_STMT(BPF_LDX | BPF_B | BPF_MSH, 0),  // X = the IP header's length
    /* 5 */ BPF_STMT(BPF_LD | BPF_H | BPF_IND, 2),
    /* 6 */ JEQ(53, 3, 0),
    /* 7 */ BPF_STMT(BPF_LD | BPF_H | BPF_IND, 0),
    /* 8 */ JEQ(53, 1, 0),
    /* 9 */ RET(60 + 8),
    /* 10 */ RET(0),
};

// IPv6: the data starts at the UDP header; the destination is read from the IPv6 header
// (SKF_NET_OFF). Destination not ::1, neither port 53; keeps the UDP header.
constexpr uint32_t kNet = static_cast<uint32_t>(SKF_NET_OFF);
const sock_filter kFilter6[] = {
    /* 0 */ LOAD(BPF_W, kNet + 24),
    /* 1 */ JEQ(0, 0, 6),  // to 8: not ::1
    /* 2 */ LOAD(BPF_W, kNet + 28),
    /* 3 */ JEQ(0, 0, 4),
    /* 4 */ LOAD(BPF_W, kNet + 32),
    /* 5 */ JEQ(0, 0, 2),
    /* 6 */ LOAD(BPF_W, kNet + 36),
    /* 7 */ JEQ(1, 5, 0),  // to 13: drop
    /* 8 */ LOAD(BPF_H, 2),
    /* 9 */ JEQ(53, 3, 0),
    /* 10 */ LOAD(BPF_H, 0),
    /* 11 */ JEQ(53, 1, 0),
    /* 12 */ RET(8),
    /* 13 */ RET(0),
};

#undef LOAD
#undef JEQ
#undef RET

}  // namespace

int OpenUdpTapInChild(int family) {
  const int fd = ::socket(family, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, IPPROTO_UDP);
  if (fd < 0) return -errno;
  const bool v6 = family == AF_INET6;
  const sock_fprog program{
      static_cast<unsigned short>(v6 ? std::size(kFilter6) : std::size(kFilter4)),
      const_cast<sock_filter*>(v6 ? kFilter6 : kFilter4)};
  const int on = 1;
  if (::setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &program, sizeof(program)) != 0 ||
      (v6 && ::setsockopt(fd, IPPROTO_IPV6, IPV6_RECVPKTINFO, &on, sizeof(on)) != 0)) {
    const int err = errno;
    ::close(fd);
    return -err;
  }
  return fd;
}

}  // namespace sbx
