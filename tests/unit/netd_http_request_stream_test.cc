// Unit tests for the per-request check of plain-HTTP connections: Host of every request,
// framing, chunked bodies, and properties over split and mutated streams.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "src/netd/http_request_stream.h"

namespace sbx::netd {
namespace {

struct Outcome {
  bool ok = false;
  std::string out;
  std::string problem;
  size_t requests = 0;
};

// Feeds `stream` in pieces of `split` bytes (0: all at once).
Outcome Check(const std::string& stream, size_t split = 0, uint16_t port = 80) {
  HttpRequestStream requests(port);
  std::vector<uint8_t> out;
  bool ok = true;
  const size_t step = split == 0 ? std::max<size_t>(stream.size(), 1) : split;
  for (size_t at = 0; at < stream.size() && ok; at += step) {
    const std::string piece = stream.substr(at, step);
    ok = requests.Feed({reinterpret_cast<const uint8_t*>(piece.data()), piece.size()}, out);
  }
  return {ok, std::string(out.begin(), out.end()), requests.problem(), requests.requests()};
}

std::string Get(const std::string& host, const std::string& extra = "") {
  return "GET /x HTTP/1.1\r\nHost: " + host + "\r\n" + extra + "\r\n";
}

TEST(HttpRequestStream, KeepAliveRequestsToTheSameHostPass) {
  const std::string stream = Get("a.test") + Get("A.test.") + Get("a.test:80") +
                             "POST /p HTTP/1.1\r\nHost: a.test\r\nContent-Length: 5\r\n\r\nhello" +
                             Get("a.test");
  const Outcome outcome = Check(stream);
  EXPECT_TRUE(outcome.ok) << outcome.problem;
  EXPECT_EQ(outcome.out, stream);
  EXPECT_EQ(outcome.requests, 5u);
}

TEST(HttpRequestStream, ALaterRequestForAnotherHostIsRefusedWithNothingOfIt) {
  const Outcome outcome = Check(Get("a.test") + Get("b.test") + Get("a.test"));
  EXPECT_FALSE(outcome.ok);
  EXPECT_EQ(outcome.out, Get("a.test"));
  EXPECT_EQ(outcome.requests, 1u);
  EXPECT_NE(outcome.problem.find("b.test"), std::string::npos) << outcome.problem;
}

TEST(HttpRequestStream, ABodyOnAMethodThatTakesNoneIsRefused) {
  // A front end ignoring a GET's body reads it as the next request (CL.0, TE.0).
  const std::string hidden = Get("b.test");
  for (const char* method : {"GET", "HEAD", "OPTIONS", "DELETE", "TRACE"}) {
    SCOPED_TRACE(method);
    const std::string head = std::string(method) + " / HTTP/1.1\r\nHost: a.test\r\n";
    const Outcome by_length =
        Check(head + "Content-Length: " + std::to_string(hidden.size()) + "\r\n\r\n" + hidden);
    EXPECT_FALSE(by_length.ok);
    EXPECT_TRUE(by_length.out.empty()) << by_length.out;
    EXPECT_FALSE(Check(head + "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n").ok);
    EXPECT_TRUE(Check(head + "Content-Length: 0\r\n\r\n").ok) << "an empty body is none";
  }
  EXPECT_TRUE(Check("POST / HTTP/1.1\r\nHost: a.test\r\nContent-Length: 2\r\n\r\nok").ok);
}

TEST(HttpRequestStream, LengthsAServerCouldReadDifferentlyAreRefused) {
  const std::string post = "POST / HTTP/1.1\r\nHost: a.test\r\n";
  EXPECT_FALSE(Check(post + "Content-Length: 05\r\n\r\nhello").ok) << "leading zero";
  EXPECT_FALSE(Check(post + "Content-Length: 2147483648\r\n\r\n").ok) << "2^31";
  EXPECT_TRUE(Check(post + "Content-Length: 2147483647\r\n\r\n").ok) << "2^31 - 1, unfinished";
  const std::string chunked = post + "Transfer-Encoding: chunked\r\n\r\n";
  EXPECT_FALSE(Check(chunked + "0000000100000005\r\nhello\r\n0\r\n\r\n").ok) << "wraps at 32 bits";
  EXPECT_FALSE(Check(chunked + "05\r\nhello\r\n0\r\n\r\n").ok) << "leading zero";
  EXPECT_FALSE(Check(chunked + "80000000\r\n").ok) << "2^31";
  EXPECT_TRUE(Check(chunked + "5\r\nhello\r\n0\r\n\r\n").ok);
}

TEST(HttpRequestStream, AnAbsoluteFormTargetMustNameTheHostsPort) {
  const std::string target_port = "GET http://a.test:8443/ HTTP/1.1\r\nHost: a.test\r\n\r\n";
  EXPECT_FALSE(Check(target_port).ok);
  EXPECT_TRUE(Check("GET http://a.test/ HTTP/1.1\r\nHost: a.test\r\n\r\n").ok);
  EXPECT_TRUE(Check("GET http://a.test:80/ HTTP/1.1\r\nHost: a.test\r\n\r\n").ok);
  EXPECT_TRUE(Check("GET http://a.test:8080/ HTTP/1.1\r\nHost: a.test:8080\r\n\r\n", 0, 8080).ok);
}

TEST(HttpRequestStream, AHostNamingAnotherPortIsRefused) {
  EXPECT_FALSE(Check(Get("a.test") + Get("a.test:8080")).ok);
  EXPECT_FALSE(Check(Get("a.test:81")).ok);
  EXPECT_TRUE(Check(Get("a.test:8080"), 0, 8080).ok);
}

TEST(HttpRequestStream, AHeadIsHeldUntilComplete) {
  HttpRequestStream requests(80);
  std::vector<uint8_t> out;
  const std::string head = Get("a.test");
  const std::string part = head.substr(0, head.size() - 1);
  ASSERT_TRUE(requests.Feed({reinterpret_cast<const uint8_t*>(part.data()), part.size()}, out));
  EXPECT_TRUE(out.empty());
  const uint8_t last = '\n';
  ASSERT_TRUE(requests.Feed({&last, 1}, out));
  EXPECT_EQ(std::string(out.begin(), out.end()), head);
}

TEST(HttpRequestStream, ARequestInsideAContentLengthBodyIsBodyAndTheNextIsChecked) {
  const std::string hidden = Get("b.test");
  const std::string post =
      "POST / HTTP/1.1\r\nHost: a.test\r\nContent-Length: " + std::to_string(hidden.size()) +
      "\r\n\r\n" + hidden;
  EXPECT_TRUE(Check(post + Get("a.test")).ok);
  EXPECT_FALSE(Check(post + Get("b.test")).ok);
}

TEST(HttpRequestStream, ChunkedBodiesAreFollowedChunkByChunk) {
  const std::string hidden = Get("b.test");
  char size[16];
  snprintf(size, sizeof(size), "%zX", hidden.size());
  const std::string post = "POST / HTTP/1.1\r\nHost: a.test\r\nTransfer-Encoding: Chunked\r\n\r\n" +
                           std::string(size) + "\r\n" + hidden +
                           "\r\n3\r\nabc\r\n0\r\nX-T: 1\r\n\r\n";
  for (size_t split : {0, 1, 2, 7}) {
    const Outcome outcome = Check(post + Get("a.test"), split);
    EXPECT_TRUE(outcome.ok) << split << ": " << outcome.problem;
    EXPECT_EQ(outcome.requests, 2u);
    EXPECT_FALSE(Check(post + Get("b.test"), split).ok) << split;
  }
}

TEST(HttpRequestStream, MalformedChunksAreRefused) {
  const std::string head = "POST / HTTP/1.1\r\nHost: a.test\r\nTransfer-Encoding: chunked\r\n\r\n";
  for (const std::string body :
       {"3;ext=1\r\nabc\r\n0\r\n\r\n", "0x3\r\nabc\r\n0\r\n\r\n", "3\nabc\r\n0\r\n\r\n",
        " 3\r\nabc\r\n0\r\n\r\n", "3\r\nabcd\r\n0\r\n\r\n", "-1\r\n", "\r\n",
        "11111111111111111\r\n", "0\r\nbad trailer\r\n\r\n", "0\r\n\r\n\n"}) {
    const Outcome outcome = Check(head + body + Get("a.test"));
    EXPECT_FALSE(outcome.ok) << body;
    EXPECT_EQ(outcome.requests, 1u) << body;  // the request after it never goes
  }
}

TEST(HttpRequestStream, AmbiguousFramingIsRefusedBeforeAnythingGoes) {
  const std::string start = "POST / HTTP/1.1\r\nHost: a.test\r\n";
  for (const std::string fields : {
           "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n",
           "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n",
           "Content-Length: 5\r\nContent-Length: 5\r\n",
           "Content-Length: 5\r\nContent-Length: 6\r\n",
           "Content-Length: 5, 5\r\n",
           "Content-Length: +5\r\n",
           "Content-Length: 0x5\r\n",
           "Content-Length: 99999999999999999999\r\n",
           "Transfer-Encoding: gzip, chunked\r\n",
           "Transfer-Encoding: chunked, identity\r\n",
           "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n",
           "Transfer-Encoding: xchunked\r\n",
           "Transfer-Encoding:\r\n chunked\r\n",  // obs-fold
           "Transfer-Encoding : chunked\r\n",
           "Transfer-Encoding: chunked\n",  // bare LF
           "Upgrade: websocket\r\nConnection: Upgrade\r\n",
           "Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: "
           "AAMAAABkAAQAoAAAAAIAAAAA\r\n",
       }) {
    const Outcome outcome = Check(Get("a.test") + start + fields + "\r\n0\r\n\r\n");
    EXPECT_FALSE(outcome.ok) << fields;
    EXPECT_EQ(outcome.out, Get("a.test")) << fields;
  }
  EXPECT_FALSE(Check("POST / HTTP/1.0\r\nHost: a.test\r\nTransfer-Encoding: chunked\r\n\r\n").ok);
  EXPECT_FALSE(Check("CONNECT a.test:80 HTTP/1.1\r\nHost: a.test:80\r\n\r\n").ok);
  EXPECT_FALSE(Check(Get("a.test") + "\r\n" + Get("a.test")).ok);  // a stray CRLF between requests
  EXPECT_FALSE(Check(Get("a.test") + std::string(kMaxHttpHead, 'a')).ok);
}

TEST(HttpRequestStream, ExpectIsDroppedAndNothingElseChanges) {
  const Outcome outcome = Check(
      "PUT /f HTTP/1.1\r\nHost: a.test\r\nexpect: 100-continue\r\nContent-Length: 2\r\nX-Expect: "
      "1\r\n\r\nok");
  ASSERT_TRUE(outcome.ok) << outcome.problem;
  EXPECT_EQ(outcome.out,
            "PUT /f HTTP/1.1\r\nHost: a.test\r\nContent-Length: 2\r\nX-Expect: 1\r\n\r\nok");
}

// Any split of a stream gives the same bytes and verdict as the whole, and what is let through
// is itself a stream that passes unchanged: over a corpus of valid streams and random mutations.
TEST(HttpRequestStream, SplitsAndMutationsAgree) {
  const std::vector<std::string> corpus = {
      Get("a.test") + Get("a.test"),
      "POST / HTTP/1.1\r\nHost: a.test\r\nContent-Length: 3\r\n\r\nabc" + Get("a.test"),
      "POST / HTTP/1.1\r\nHost: a.test\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n0\r\n\r\n" +
          Get("a.test"),
  };
  std::mt19937 random(20240601);
  const std::string alphabet = "\r\n :;0123456789abcdefAB-HTPGOSTCLhosttransfer-encodingchunked\t";
  for (int round = 0; round < 20000; ++round) {
    std::string stream = corpus[random() % corpus.size()];
    const int edits = 1 + static_cast<int>(random() % 4);
    for (int e = 0; e < edits; ++e) {
      const size_t at = random() % stream.size();
      switch (random() % 3) {
        case 0:
          stream[at] = alphabet[random() % alphabet.size()];
          break;
        case 1:
          stream.insert(at, 1, alphabet[random() % alphabet.size()]);
          break;
        default:
          stream.erase(at, 1);
          break;
      }
      if (stream.empty()) stream = "G";
    }
    const Outcome whole = Check(stream);
    const size_t split = 1 + random() % 9;
    const Outcome parts = Check(stream, split);
    ASSERT_EQ(whole.ok, parts.ok) << split << " " << stream;
    ASSERT_EQ(whole.out, parts.out) << split << " " << stream;
    const Outcome again = Check(whole.out);
    ASSERT_TRUE(again.ok) << stream;
    ASSERT_EQ(again.out, whole.out) << stream;
    ASSERT_EQ(again.requests, whole.requests) << stream;
  }
}

}  // namespace
}  // namespace sbx::netd
