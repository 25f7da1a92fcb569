// A bounded reader of the server_name (SNI) in a TLS ClientHello, from the first bytes a client
// sent on a connection.
//
// sbx-netd reads (and keeps, to forward later) the connection's first bytes and calls
// ReadClientHelloSni() on all of them after each read, until the result is not kNeedMore:
//   - the ClientHello may span several TLS records (fragmentation is legal and is a known way
//     around naive SNI filters), each record being a handshake record of at most 2^14 bytes;
//   - the ClientHello itself may be at most kMaxClientHello bytes (post-quantum key shares make
//     real ones 1.5-2 KiB; 16 KiB leaves room), and no more than kMaxTlsPeek bytes of input are
//     ever needed: past that the result is kInvalid, never kNeedMore;
//   - a duplicated extension, two host_name entries or an empty name are kInvalid (RFC 8446
//     4.2, RFC 6066 3), so two parsers cannot disagree about which name counts.
// The name is returned as sent (not normalized, not validated as a host name): the caller
// normalizes it with the policy's rules.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace sbx::netd {

inline constexpr size_t kMaxClientHello = 16 * 1024;
inline constexpr size_t kMaxTlsPeek = 64 * 1024;

enum class TlsPeekStatus {
  kNeedMore,  // a prefix of a plausible ClientHello: read more (within kMaxTlsPeek)
  kSni,       // a complete ClientHello with a server_name; see `name`
  kNoSni,     // a complete ClientHello without a server_name
  kNotTls,    // the first byte is not a TLS handshake record
  kInvalid,   // a TLS record, but not a well-formed ClientHello within the bounds
};

struct TlsPeekResult {
  TlsPeekStatus status = TlsPeekStatus::kNeedMore;
  std::string name;  // kSni only
  // kNeedMore: the input size below which calling again cannot give another answer (the end
  // of the record being read), so a client sending one byte at a time costs one look per record.
  size_t need_at_least = 0;
};

TlsPeekResult ReadClientHelloSni(std::span<const uint8_t> bytes);

}  // namespace sbx::netd
