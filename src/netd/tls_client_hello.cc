// Reassembles the ClientHello from TLS records and reads its server_name extension.
#include "src/netd/tls_client_hello.h"

#include <algorithm>
#include <set>
#include <vector>

namespace sbx::netd {
namespace {

constexpr uint8_t kRecordHandshake = 22;
constexpr uint8_t kHandshakeClientHello = 1;
constexpr size_t kRecordHeader = 5;
constexpr size_t kMaxRecordPayload = 1 << 14;
// Real clients send the ClientHello in one or two records; evasion tools split it into a few
// more. A bound keeps the cost of re-reading the prefix after every read small.
constexpr size_t kMaxHandshakeRecords = 64;
constexpr uint16_t kExtensionServerName = 0;
constexpr uint8_t kNameTypeHostName = 0;

// A cursor over the reassembled ClientHello body; every read is bounds-checked.
class Reader {
 public:
  explicit Reader(std::span<const uint8_t> bytes) : bytes_(bytes) {}
  bool Read8(uint8_t& out) {
    if (left() < 1) return false;
    out = bytes_[at_++];
    return true;
  }
  bool Read16(uint16_t& out) {
    if (left() < 2) return false;
    out = static_cast<uint16_t>(bytes_[at_] << 8 | bytes_[at_ + 1]);
    at_ += 2;
    return true;
  }
  // A block with a length prefix of `prefix_bytes` (1 or 2).
  bool ReadBlock(int prefix_bytes, std::span<const uint8_t>& out) {
    size_t length = 0;
    if (prefix_bytes == 1) {
      uint8_t l8;
      if (!Read8(l8)) return false;
      length = l8;
    } else {
      uint16_t l16;
      if (!Read16(l16)) return false;
      length = l16;
    }
    return Take(length, out);
  }
  bool Take(size_t length, std::span<const uint8_t>& out) {
    if (left() < length) return false;
    out = bytes_.subspan(at_, length);
    at_ += length;
    return true;
  }
  size_t left() const { return bytes_.size() - at_; }

 private:
  std::span<const uint8_t> bytes_;
  size_t at_ = 0;
};

TlsPeekResult Invalid() { return {TlsPeekStatus::kInvalid, "", 0}; }

// The server_name extension's body: a list holding one host_name.
TlsPeekResult ReadServerName(std::span<const uint8_t> body) {
  Reader reader(body);
  std::span<const uint8_t> list;
  if (!reader.ReadBlock(2, list) || reader.left() != 0) return Invalid();
  Reader entries(list);
  std::string name;
  while (entries.left() > 0) {
    uint8_t type;
    std::span<const uint8_t> value;
    if (!entries.Read8(type) || !entries.ReadBlock(2, value)) return Invalid();
    if (type != kNameTypeHostName) continue;  // unknown name types are skipped (RFC 6066)
    if (!name.empty() || value.empty()) return Invalid();
    name.assign(value.begin(), value.end());
  }
  if (name.empty()) return Invalid();
  return {TlsPeekStatus::kSni, std::move(name), 0};
}

TlsPeekResult ReadClientHelloBody(std::span<const uint8_t> body) {
  Reader reader(body);
  uint16_t legacy_version;
  std::span<const uint8_t> random, session_id, cipher_suites, compression;
  if (!reader.Read16(legacy_version) || !reader.Take(32, random) ||
      !reader.ReadBlock(1, session_id) || session_id.size() > 32 ||
      !reader.ReadBlock(2, cipher_suites) || cipher_suites.size() < 2 ||
      cipher_suites.size() % 2 != 0 || !reader.ReadBlock(1, compression) || compression.empty()) {
    return Invalid();
  }
  if ((legacy_version >> 8) != 3) return Invalid();
  if (reader.left() == 0) return {TlsPeekStatus::kNoSni, "", 0};  // no extensions at all
  std::span<const uint8_t> extensions;
  if (!reader.ReadBlock(2, extensions) || reader.left() != 0) return Invalid();
  Reader walk(extensions);
  std::set<uint16_t> seen;
  TlsPeekResult result{TlsPeekStatus::kNoSni, "", 0};
  while (walk.left() > 0) {
    uint16_t type;
    std::span<const uint8_t> data;
    if (!walk.Read16(type) || !walk.ReadBlock(2, data)) return Invalid();
    if (!seen.insert(type).second) return Invalid();
    if (type == kExtensionServerName) {
      result = ReadServerName(data);
      if (result.status == TlsPeekStatus::kInvalid) return result;
    }
  }
  return result;
}

}  // namespace

TlsPeekResult ReadClientHelloSni(std::span<const uint8_t> bytes) {
  if (bytes.empty()) return {TlsPeekStatus::kNeedMore, "", 1};
  if (bytes[0] != kRecordHandshake) return {TlsPeekStatus::kNotTls, "", 0};
  if (bytes.size() > kMaxTlsPeek) bytes = bytes.first(kMaxTlsPeek);
  // Gather handshake bytes record by record until the ClientHello is complete. Records after
  // it (ChangeCipherSpec, 0-RTT data) are not looked at.
  std::vector<uint8_t> handshake;
  size_t needed = 0;  // the ClientHello's full size with its header, once known
  size_t at = 0;
  size_t records = 0;
  size_t next_useful = 0;  // the input size at which another look can tell more
  while (needed == 0 || handshake.size() < needed) {
    if (at + kRecordHeader > bytes.size()) {
      next_useful = at + kRecordHeader;
      break;
    }
    if (++records > kMaxHandshakeRecords) return Invalid();
    const uint8_t type = bytes[at];
    const uint8_t major = bytes[at + 1];
    const size_t length = static_cast<size_t>(bytes[at + 3] << 8 | bytes[at + 4]);
    // Only handshake records may come before the ClientHello is complete; 0-length handshake
    // records are forbidden (RFC 8446 5.1).
    if (type != kRecordHandshake || major != 3 || length == 0 || length > kMaxRecordPayload) {
      return Invalid();
    }
    const size_t available = std::min(length, bytes.size() - at - kRecordHeader);
    handshake.insert(handshake.end(), bytes.begin() + at + kRecordHeader,
                     bytes.begin() + at + kRecordHeader + available);
    at += kRecordHeader + available;
    if (!handshake.empty() && handshake[0] != kHandshakeClientHello) return Invalid();
    if (needed == 0 && handshake.size() >= 4) {
      const size_t body = static_cast<size_t>(handshake[1]) << 16 |
                          static_cast<size_t>(handshake[2]) << 8 | handshake[3];
      if (body > kMaxClientHello) return Invalid();
      needed = 4 + body;
    }
    if (available < length) {
      next_useful = at + (length - available);
      break;
    }
  }
  if (needed == 0 || handshake.size() < needed) {
    // A maximal ClientHello fits in kMaxTlsPeek with its record headers unless it is cut into
    // tiny records, which no real client does: refused rather than waited for.
    if (bytes.size() >= kMaxTlsPeek) return Invalid();
    return {TlsPeekStatus::kNeedMore, "", std::min(next_useful, kMaxTlsPeek)};
  }
  return ReadClientHelloBody(std::span<const uint8_t>(handshake).subspan(4, needed - 4));
}

}  // namespace sbx::netd
