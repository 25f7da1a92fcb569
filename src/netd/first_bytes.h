// What a client's first bytes on a peeked port (80, 443) say: the SNI of a TLS ClientHello or
// the Host of an HTTP/1.x request. The bytes are kept to be forwarded upstream unchanged.
//
// Usage: after each read, `Add(chunk)`; once it returns a Peek, stop reading and use buffer().
// Reading is bounded: the answer is final by kMaxTlsPeek (TLS) or kMaxHttpHead (other) bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace sbx::netd {

enum class PeekKind {
  kNotPeeked,    // the port is not peeked (server-speaks-first protocols would deadlock)
  kTlsSni,       // name = the ClientHello's server_name, as sent
  kTlsNoSni,     // a ClientHello without server_name
  kTlsInvalid,   // a TLS record that is not a well-formed, bounded ClientHello
  kHttpHost,     // name = the request's Host without port, as sent
  kHttpInvalid,  // neither TLS nor a well-formed HTTP/1.x head with one Host
  kTimeout,      // the client sent no complete answer in time
};

struct Peek {
  PeekKind kind = PeekKind::kNotPeeked;
  std::string name;
};

// The ports whose first bytes are read before deciding.
bool PeeksFirstBytes(uint16_t port);

class FirstBytesReader {
 public:
  // Appends `chunk`; the verdict once the bytes so far decide it.
  std::optional<Peek> Add(std::span<const uint8_t> chunk);
  // The verdict when the client ends its side before the bytes decided anything.
  Peek AtEndOfStream() const;
  const std::vector<uint8_t>& buffer() const { return buffer_; }
  std::vector<uint8_t> TakeBuffer() { return std::move(buffer_); }
  // How many more bytes a read may usefully ask for.
  size_t Room() const;

 private:
  std::vector<uint8_t> buffer_;
  size_t next_look_ = 1;  // the buffer size at which the bytes are read again
};

}  // namespace sbx::netd
