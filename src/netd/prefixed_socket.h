// A TCP socket whose first reads return bytes that were read from it before (the ClientHello
// the SNI check consumed), so that a TLS server layered on it sees the stream from its first
// byte. Writes go straight to the socket. Meets Asio's AsyncStream requirements (and has the
// lowest_layer() that asio::ssl::stream needs).
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include <boost/asio/async_result.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>

namespace sbx::netd {

class PrefixedSocket {
 public:
  using executor_type = boost::asio::ip::tcp::socket::executor_type;
  using lowest_layer_type = boost::asio::ip::tcp::socket::lowest_layer_type;

  PrefixedSocket(boost::asio::ip::tcp::socket socket, std::vector<uint8_t> prefix)
      : socket_(std::move(socket)), prefix_(std::move(prefix)) {}
  PrefixedSocket(PrefixedSocket&&) = default;

  executor_type get_executor() noexcept { return socket_.get_executor(); }
  lowest_layer_type& lowest_layer() { return socket_.lowest_layer(); }
  const lowest_layer_type& lowest_layer() const { return socket_.lowest_layer(); }
  boost::asio::ip::tcp::socket& socket() { return socket_; }

  template <typename MutableBuffers, typename ReadHandler>
  auto async_read_some(const MutableBuffers& buffers, ReadHandler&& handler) {
    if (offset_ < prefix_.size()) {
      const size_t copied = boost::asio::buffer_copy(
          buffers, boost::asio::buffer(prefix_.data() + offset_, prefix_.size() - offset_));
      offset_ += copied;
      if (offset_ == prefix_.size()) {
        std::vector<uint8_t>().swap(prefix_);
        offset_ = 0;
      }
      // Completes later, never inside this call, as every Asio operation must.
      return boost::asio::async_initiate<ReadHandler, void(boost::system::error_code, size_t)>(
          [executor = socket_.get_executor(), copied](auto completion) {
            boost::asio::post(executor, [completion = std::move(completion), copied]() mutable {
              completion(boost::system::error_code(), copied);
            });
          },
          handler);
    }
    return socket_.async_read_some(buffers, std::forward<ReadHandler>(handler));
  }

  template <typename ConstBuffers, typename WriteHandler>
  auto async_write_some(const ConstBuffers& buffers, WriteHandler&& handler) {
    return socket_.async_write_some(buffers, std::forward<WriteHandler>(handler));
  }

 private:
  boost::asio::ip::tcp::socket socket_;
  std::vector<uint8_t> prefix_;
  size_t offset_ = 0;
};

}  // namespace sbx::netd
