// Unit tests for sbx-netd's ClientHello SNI reader and the first-bytes reader around it.
#include "src/netd/tls_client_hello.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "src/netd/first_bytes.h"

namespace sbx::netd {
namespace {

// `openssl s_client -connect 127.0.0.1:<port> -servername pypi.org` (OpenSSL 3.0), as captured.
constexpr const char* kOpensslClientHelloHex =
    "16030101350100013103034c8ea64093a8a7159089ba5d3b5f82fb4983ee3f855f40c2459d3109fbdc338f20"
    "81e071d5b08eaf2c49866bead429f6b33fcc163b335d78f933eedc3da976fd40003e130213031301c02cc030"
    "009fcca9cca8ccaac02bc02f009ec024c028006bc023c0270067c00ac0140039c009c0130033009d009c003d"
    "003c0035002f00ff010000aa0000000d000b000008707970692e6f7267000b000403000102000a0016001400"
    "1d0017001e0019001801000101010201030104002300000016000000170000000d002a002804030503060308"
    "0708080809080a080b080408050806040105010601030303010302040205020602002b000908030403030302"
    "0301002d00020101003300260024001d0020b5ec274686a83c03b9aa897fa42d0da36695a7a4620ffb83c5dd"
    "75bbdf00810a";

std::vector<uint8_t> FromHex(const std::string& hex) {
  std::vector<uint8_t> bytes;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    bytes.push_back(static_cast<uint8_t>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return bytes;
}

void Append16(std::vector<uint8_t>& out, size_t value) {
  out.push_back(static_cast<uint8_t>(value >> 8));
  out.push_back(static_cast<uint8_t>(value));
}

std::vector<uint8_t> Extension(uint16_t type, const std::vector<uint8_t>& data) {
  std::vector<uint8_t> out;
  Append16(out, type);
  Append16(out, data.size());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

std::vector<uint8_t> ServerName(const std::vector<std::string>& names) {
  std::vector<uint8_t> list;
  for (const std::string& name : names) {
    list.push_back(0);  // host_name
    Append16(list, name.size());
    list.insert(list.end(), name.begin(), name.end());
  }
  std::vector<uint8_t> data;
  Append16(data, list.size());
  data.insert(data.end(), list.begin(), list.end());
  return Extension(0, data);
}

// A ClientHello handshake message (header included) with these extensions; no extensions
// block at all when `with_extensions` is false.
std::vector<uint8_t> Handshake(const std::vector<std::vector<uint8_t>>& extensions,
                               bool with_extensions = true) {
  std::vector<uint8_t> body = {0x03, 0x03};
  body.insert(body.end(), 32, 0xaa);                  // random
  body.push_back(0);                                  // session id
  body.insert(body.end(), {0x00, 0x02, 0x13, 0x01});  // one cipher suite
  body.insert(body.end(), {0x01, 0x00});              // null compression
  if (with_extensions) {
    std::vector<uint8_t> all;
    for (const auto& extension : extensions)
      all.insert(all.end(), extension.begin(), extension.end());
    Append16(body, all.size());
    body.insert(body.end(), all.begin(), all.end());
  }
  std::vector<uint8_t> handshake = {1, static_cast<uint8_t>(body.size() >> 16),
                                    static_cast<uint8_t>(body.size() >> 8),
                                    static_cast<uint8_t>(body.size())};
  handshake.insert(handshake.end(), body.begin(), body.end());
  return handshake;
}

// `handshake` cut into handshake records of at most `fragment` bytes.
std::vector<uint8_t> Records(const std::vector<uint8_t>& handshake, size_t fragment,
                             uint8_t type = 22) {
  std::vector<uint8_t> out;
  for (size_t at = 0; at < handshake.size(); at += fragment) {
    const size_t size = std::min(fragment, handshake.size() - at);
    out.insert(out.end(), {type, 0x03, 0x01});
    Append16(out, size);
    out.insert(out.end(), handshake.begin() + at, handshake.begin() + at + size);
  }
  return out;
}

// The handshake message inside a captured single-record ClientHello.
std::vector<uint8_t> HandshakeOf(const std::vector<uint8_t>& record) {
  return std::vector<uint8_t>(record.begin() + 5, record.end());
}

TEST(ClientHello, ReadsTheServerNameOfARealClientHello) {
  const TlsPeekResult result = ReadClientHelloSni(FromHex(kOpensslClientHelloHex));
  EXPECT_EQ(result.status, TlsPeekStatus::kSni);
  EXPECT_EQ(result.name, "pypi.org");
}

TEST(ClientHello, ReadsAClientHelloSplitAcrossRecords) {
  const auto handshake = HandshakeOf(FromHex(kOpensslClientHelloHex));
  for (size_t fragment : {1, 2, 7, 100, 200}) {
    if (handshake.size() / fragment + 1 > 64) continue;  // more records than allowed
    const TlsPeekResult result = ReadClientHelloSni(Records(handshake, fragment));
    EXPECT_EQ(result.status, TlsPeekStatus::kSni) << fragment;
    EXPECT_EQ(result.name, "pypi.org") << fragment;
  }
  // The handshake header itself split 1 + 3 bytes, the rest in one record.
  std::vector<uint8_t> split = Records({handshake.begin(), handshake.begin() + 1}, 1);
  const auto rest = Records({handshake.begin() + 1, handshake.end()}, 16384);
  split.insert(split.end(), rest.begin(), rest.end());
  EXPECT_EQ(ReadClientHelloSni(split).name, "pypi.org");
}

TEST(ClientHello, TooManyRecordsAreInvalid) {
  const auto handshake = HandshakeOf(FromHex(kOpensslClientHelloHex));
  EXPECT_EQ(ReadClientHelloSni(Records(handshake, 1)).status, TlsPeekStatus::kInvalid);
}

TEST(ClientHello, EveryTruncationNeedsMoreAndNeverReadsPastTheEnd) {
  for (const auto& bytes : {FromHex(kOpensslClientHelloHex),
                            Records(HandshakeOf(FromHex(kOpensslClientHelloHex)), 50)}) {
    for (size_t size = 0; size < bytes.size(); ++size) {
      // A copy of exactly `size` bytes, so ASan catches any read past it.
      const std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + size);
      const TlsPeekResult result = ReadClientHelloSni(cut);
      ASSERT_EQ(result.status, TlsPeekStatus::kNeedMore) << size;
      ASSERT_GT(result.need_at_least, size) << size;
      ASSERT_LE(result.need_at_least, bytes.size()) << size;
    }
    EXPECT_EQ(ReadClientHelloSni(bytes).status, TlsPeekStatus::kSni);
  }
}

TEST(ClientHello, RecordsAfterTheClientHelloAreNotRead) {
  auto bytes = FromHex(kOpensslClientHelloHex);
  bytes.insert(bytes.end(), {20, 3, 3, 0, 1, 1, 23, 3, 3, 0, 2, 0xde});  // CCS, partial data
  EXPECT_EQ(ReadClientHelloSni(bytes).name, "pypi.org");
}

TEST(ClientHello, WithoutServerName) {
  EXPECT_EQ(ReadClientHelloSni(Records(Handshake({Extension(43, {2, 3, 4})}), 16384)).status,
            TlsPeekStatus::kNoSni);
  EXPECT_EQ(ReadClientHelloSni(Records(Handshake({}, false), 16384)).status, TlsPeekStatus::kNoSni);
}

TEST(ClientHello, BuiltClientHelloWithServerName) {
  const auto bytes =
      Records(Handshake({Extension(10, {0, 2, 0, 29}), ServerName({"Example.COM"})}), 16384);
  const TlsPeekResult result = ReadClientHelloSni(bytes);
  EXPECT_EQ(result.status, TlsPeekStatus::kSni);
  EXPECT_EQ(result.name, "Example.COM");  // as sent; the caller normalizes
}

TEST(ClientHello, AmbiguousServerNamesAreInvalid) {
  const auto two_names = Records(Handshake({ServerName({"a.com", "b.com"})}), 16384);
  EXPECT_EQ(ReadClientHelloSni(two_names).status, TlsPeekStatus::kInvalid);
  const auto twice = Records(Handshake({ServerName({"a.com"}), ServerName({"b.com"})}), 16384);
  EXPECT_EQ(ReadClientHelloSni(twice).status, TlsPeekStatus::kInvalid);
  const auto empty = Records(Handshake({ServerName({""})}), 16384);
  EXPECT_EQ(ReadClientHelloSni(empty).status, TlsPeekStatus::kInvalid);
  const auto duplicate_other =
      Records(Handshake({Extension(43, {}), Extension(43, {}), ServerName({"a.com"})}), 16384);
  EXPECT_EQ(ReadClientHelloSni(duplicate_other).status, TlsPeekStatus::kInvalid);
}

TEST(ClientHello, NotTls) {
  const std::string http = "GET / HTTP/1.1\r\n";
  EXPECT_EQ(ReadClientHelloSni({reinterpret_cast<const uint8_t*>(http.data()), http.size()}).status,
            TlsPeekStatus::kNotTls);
  const std::vector<uint8_t> ssh = {'S', 'S', 'H', '-'};
  EXPECT_EQ(ReadClientHelloSni(ssh).status, TlsPeekStatus::kNotTls);
}

TEST(ClientHello, MalformedRecordsAndMessagesAreInvalid) {
  const auto handshake = HandshakeOf(FromHex(kOpensslClientHelloHex));
  // A ServerHello (type 2) instead of a ClientHello.
  auto server_hello = handshake;
  server_hello[0] = 2;
  EXPECT_EQ(ReadClientHelloSni(Records(server_hello, 16384)).status, TlsPeekStatus::kInvalid);
  // An application-data record in the middle of the ClientHello.
  auto mixed = Records({handshake.begin(), handshake.begin() + 10}, 16384);
  const auto data = Records({handshake.begin() + 10, handshake.end()}, 16384, 23);
  mixed.insert(mixed.end(), data.begin(), data.end());
  EXPECT_EQ(ReadClientHelloSni(mixed).status, TlsPeekStatus::kInvalid);
  // A zero-length handshake record.
  EXPECT_EQ(ReadClientHelloSni(std::vector<uint8_t>{22, 3, 1, 0, 0}).status,
            TlsPeekStatus::kInvalid);
  // A record over 2^14 bytes.
  EXPECT_EQ(ReadClientHelloSni(std::vector<uint8_t>{22, 3, 1, 0x40, 0x01}).status,
            TlsPeekStatus::kInvalid);
  // Extensions longer than the message.
  auto long_extensions = Handshake({ServerName({"a.com"})});
  long_extensions[long_extensions.size() - 12] += 1;
  EXPECT_EQ(ReadClientHelloSni(Records(long_extensions, 16384)).status, TlsPeekStatus::kInvalid);
}

TEST(ClientHello, OversizeClientHelloIsInvalidAtItsHeader) {
  // A handshake header announcing 16 KiB + 1: refused before any more bytes are awaited.
  const std::vector<uint8_t> header = {22, 3, 1, 0, 4, 1, 0x00, 0x40, 0x01};
  EXPECT_EQ(ReadClientHelloSni(header).status, TlsPeekStatus::kInvalid);
  // 16 KiB exactly is within bounds: more is needed.
  const std::vector<uint8_t> largest = {22, 3, 1, 0x40, 0x00, 1, 0x00, 0x40, 0x00};
  EXPECT_EQ(ReadClientHelloSni(largest).status, TlsPeekStatus::kNeedMore);
}

TEST(ClientHello, NoAnswerWaitsBeyondTheHardCap) {
  std::vector<uint8_t> bytes = {22, 3, 1, 0x40, 0x00, 1, 0x00, 0x40, 0x00};
  bytes.resize(kMaxTlsPeek + 100, 0);
  const TlsPeekResult result = ReadClientHelloSni(bytes);
  EXPECT_NE(result.status, TlsPeekStatus::kNeedMore);
}

TEST(FirstBytes, ByteByByteDecidesAtTheLastByteOfTheClientHello) {
  const auto bytes = Records(HandshakeOf(FromHex(kOpensslClientHelloHex)), 100);
  FirstBytesReader reader;
  for (size_t i = 0; i < bytes.size(); ++i) {
    const auto peek = reader.Add({&bytes[i], 1});
    if (i + 1 < bytes.size()) {
      ASSERT_FALSE(peek) << i;
    } else {
      ASSERT_TRUE(peek);
      EXPECT_EQ(peek->kind, PeekKind::kTlsSni);
      EXPECT_EQ(peek->name, "pypi.org");
    }
  }
  EXPECT_EQ(reader.buffer(), bytes);  // kept whole, to be forwarded
}

TEST(FirstBytes, HttpAndOtherProtocols) {
  FirstBytesReader http;
  const std::string request = "GET / HTTP/1.1\r\nHost: pypi.org\r\n\r\n";
  const auto peek = http.Add({reinterpret_cast<const uint8_t*>(request.data()), request.size()});
  ASSERT_TRUE(peek);
  EXPECT_EQ(peek->kind, PeekKind::kHttpHost);
  EXPECT_EQ(peek->name, "pypi.org");

  FirstBytesReader ssh;
  const std::string banner = "SSH-2.0-OpenSSH_9.2\r\n";
  const auto other = ssh.Add({reinterpret_cast<const uint8_t*>(banner.data()), banner.size()});
  ASSERT_TRUE(other);
  EXPECT_EQ(other->kind, PeekKind::kHttpInvalid);

  FirstBytesReader binary;
  const uint8_t junk[] = {0x00, 0x01};
  const auto junk_peek = binary.Add(junk);
  ASSERT_TRUE(junk_peek);
  EXPECT_EQ(junk_peek->kind, PeekKind::kHttpInvalid);
}

TEST(FirstBytes, EndOfStreamBeforeAVerdict) {
  FirstBytesReader tls;
  const uint8_t start[] = {22, 3, 1};
  EXPECT_FALSE(tls.Add(start));
  EXPECT_EQ(tls.AtEndOfStream().kind, PeekKind::kTlsInvalid);
  FirstBytesReader empty;
  EXPECT_EQ(empty.AtEndOfStream().kind, PeekKind::kHttpInvalid);
  EXPECT_TRUE(PeeksFirstBytes(80));
  EXPECT_TRUE(PeeksFirstBytes(443));
  EXPECT_FALSE(PeeksFirstBytes(22));
}

}  // namespace
}  // namespace sbx::netd
