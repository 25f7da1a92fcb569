// Fuzzes sbx-netd's ClientHello reader (src/netd/tls_client_hello.h) and FirstBytesReader's
// TLS path with a connection's first bytes.
//
// Invariants beyond "no crash":
//   - kNeedMore asks for more than it has and never past kMaxTlsPeek;
//   - read incrementally in uneven chunks (as sbx-netd reads a socket) the bytes get the
//     verdict the one-shot reader gives on the same bytes, no later than the end of the record
//     that decides it, and the verdict does not change when more bytes follow;
//   - a complete ClientHello gets the same verdict and name however it is cut into handshake
//     records (one record, or two at any byte, read at once or in chunks): fragmentation must
//     not move the SNI check.
#include "src/netd/tls_client_hello.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "src/netd/first_bytes.h"
#include "tests/fuzz/first_bytes_feed.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

using sbx::netd::PeekKind;
using sbx::netd::TlsPeekResult;
using sbx::netd::TlsPeekStatus;

PeekKind KindOf(TlsPeekStatus status) {
  switch (status) {
    case TlsPeekStatus::kSni:
      return PeekKind::kTlsSni;
    case TlsPeekStatus::kNoSni:
      return PeekKind::kTlsNoSni;
    default:
      return PeekKind::kTlsInvalid;
  }
}

bool Final(TlsPeekStatus status) { return status != TlsPeekStatus::kNeedMore; }

// The handshake message the records carry, complete (header and body); nullopt when the
// records end first. Only called on bytes the reader found a complete ClientHello in.
std::optional<std::vector<uint8_t>> ClientHelloMessage(std::span<const uint8_t> bytes) {
  std::vector<uint8_t> handshake;
  size_t at = 0;
  while (at + 5 <= bytes.size()) {
    const size_t length = static_cast<size_t>(bytes[at + 3] << 8 | bytes[at + 4]);
    const size_t available = std::min(length, bytes.size() - at - 5);
    handshake.insert(handshake.end(), bytes.begin() + at + 5, bytes.begin() + at + 5 + available);
    at += 5 + available;
    if (handshake.size() >= 4) {
      const size_t needed =
          4 + (size_t{handshake[1]} << 16 | size_t{handshake[2]} << 8 | handshake[3]);
      if (handshake.size() >= needed) {
        handshake.resize(needed);
        return handshake;
      }
    }
  }
  return std::nullopt;
}

// True when the bytes end inside a record's payload.
bool InsideARecord(std::span<const uint8_t> bytes) {
  size_t at = 0;
  while (at + 5 <= bytes.size()) {
    at += 5 + static_cast<size_t>(bytes[at + 3] << 8 | bytes[at + 4]);
    if (at > bytes.size()) return true;
  }
  return false;
}

void AppendRecord(std::vector<uint8_t>& out, std::span<const uint8_t> payload) {
  out.insert(out.end(), {22, 3, 1, static_cast<uint8_t>(payload.size() >> 8),
                         static_cast<uint8_t>(payload.size() & 0xff)});
  out.insert(out.end(), payload.begin(), payload.end());
}

void CheckSameAnswer(const TlsPeekResult& got, const TlsPeekResult& want) {
  SBX_FUZZ_CHECK(got.status == want.status);
  SBX_FUZZ_CHECK(got.name == want.name);
}

// The same ClientHello in one record and in two records cut at `cut`.
void CheckRecordingsAgree(const std::vector<uint8_t>& message, const TlsPeekResult& want,
                          size_t cut) {
  const std::span<const uint8_t> all(message);
  if (message.size() <= 1 << 14) {
    std::vector<uint8_t> one;
    AppendRecord(one, all);
    CheckSameAnswer(sbx::netd::ReadClientHelloSni(one), want);
  }
  cut = 1 + cut % (message.size() - 1);
  if (cut > 1 << 14 || message.size() - cut > 1 << 14) return;
  std::vector<uint8_t> two;
  AppendRecord(two, all.first(cut));
  AppendRecord(two, all.subspan(cut));
  CheckSameAnswer(sbx::netd::ReadClientHelloSni(two), want);
  // And read from a socket in uneven chunks, as sbx-netd reads it.
  const auto fed = sbx::netd::fuzz::FeedInChunks(two);
  SBX_FUZZ_CHECK(fed.peek.has_value());
  SBX_FUZZ_CHECK(fed.peek->kind == KindOf(want.status) && fed.peek->name == want.name);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> bytes(data, size);
  const TlsPeekResult whole = sbx::netd::ReadClientHelloSni(bytes);
  if (whole.status == TlsPeekStatus::kNeedMore) {
    SBX_FUZZ_CHECK(size < sbx::netd::kMaxTlsPeek);
    SBX_FUZZ_CHECK(whole.need_at_least > size && whole.need_at_least <= sbx::netd::kMaxTlsPeek);
  }
  if (whole.status == TlsPeekStatus::kSni) SBX_FUZZ_CHECK(!whole.name.empty());
  if (whole.status != TlsPeekStatus::kSni) SBX_FUZZ_CHECK(whole.name.empty());
  if (size == 0 || data[0] != 22) {
    SBX_FUZZ_CHECK(size == 0 || whole.status == TlsPeekStatus::kNotTls);
    return 0;
  }

  const auto fed = sbx::netd::fuzz::FeedInChunks(bytes);
  const TlsPeekResult at_verdict = sbx::netd::ReadClientHelloSni(bytes.first(fed.consumed));
  if (fed.peek) {
    SBX_FUZZ_CHECK(Final(at_verdict.status));
    SBX_FUZZ_CHECK(fed.peek->kind == KindOf(at_verdict.status));
    SBX_FUZZ_CHECK(fed.peek->name == at_verdict.name);
    // Bytes after a verdict (the client's next records) do not change it.
    CheckSameAnswer(whole, at_verdict);
  } else {
    // The reader waited for more. It looks again only once the record in progress is complete
    // (need_at_least), so the one-shot reader may already know inside an unfinished record
    // (a wrong handshake type in its first byte); at a record's end it must not.
    SBX_FUZZ_CHECK(fed.consumed == size || fed.consumed == sbx::netd::kMaxTlsPeek);
    SBX_FUZZ_CHECK(!Final(at_verdict.status) || InsideARecord(bytes.first(fed.consumed)));
  }

  if (whole.status == TlsPeekStatus::kSni || whole.status == TlsPeekStatus::kNoSni) {
    const auto message = ClientHelloMessage(bytes.first(std::min(size, sbx::netd::kMaxTlsPeek)));
    SBX_FUZZ_CHECK(message.has_value());
    CheckRecordingsAgree(*message, whole, size_t{data[size - 1]} << 8 | data[size / 2]);
  }
  return 0;
}
