// The stub DNS on the sandbox's UDP :53 sockets: reads each query, answers it from policy
// (dns_responder.h), logs and counts it.
//
// The reply leaves from the socket the query came to, with the query's destination address as
// its source (IP_PKTINFO / IPV6_PKTINFO): with the sandbox's local default route a query to
// 8.8.8.8:53 lands on the 0.0.0.0:53 socket, and the client only accepts an answer from 8.8.8.8.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/udp.hpp>

#include "base/error.h"
#include "base/unique_fd.h"
#include "src/netd/netd_context.h"

namespace sbx::netd {

// The stub's reply to one query packet (empty: none is due), the query logged and counted.
// UDP and TCP (dns_tcp_session.h) both answer through it.
std::vector<uint8_t> AnswerAndRecord(std::span<const uint8_t> query, NetdContext& context);

class DnsService {
 public:
  DnsService(boost::asio::io_context& io, NetdContext& context) : socket_(io), context_(context) {}

  // Takes a bound UDP socket (AF_INET, or AF_INET6 with IPV6_V6ONLY) and starts serving it.
  Result<void> Start(UniqueFd fd);
  void Stop();

 private:
  void WaitForQueries();
  void AnswerPending();

  boost::asio::ip::udp::socket socket_;
  NetdContext& context_;
  bool v6_ = false;
};

}  // namespace sbx::netd
