// The session driver's protocol, host side: frames with deadlines and caps, strict replies.
#include <gtest/gtest.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <nlohmann/json.hpp>

#include "base/unique_fd.h"
#include "src/executor/frame_channel.h"
#include "src/executor/session_protocol.h"

namespace sbx::executor {
namespace {

struct Pair {
  UniqueFd host, peer;
};

Pair MakePair() {
  int fds[2];
  EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
  return {UniqueFd(fds[0]), UniqueFd(fds[1])};
}

void PeerWrite(const Pair& pair, const std::string& bytes) {
  ASSERT_EQ(::write(pair.peer.get(), bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
}

using Status = FrameChannel::Status;

TEST(FrameChannel, EncodesBigEndianLengthAndRoundTrips) {
  EXPECT_EQ(EncodeFrame("ab"), std::string("\0\0\0\2ab", 6));
  Pair pair = MakePair();
  FrameChannel host(pair.host.get(), -1, 1024), peer(pair.peer.get(), -1, 1024);
  std::string why, got;
  ASSERT_EQ(host.Write("hello", 1, &why), Status::kOk);
  ASSERT_EQ(peer.Read(&got, 1, &why), Status::kOk);
  EXPECT_EQ(got, "hello");
}

TEST(FrameChannel, OversizedAnnouncementIsMalformedWithoutReadingIt) {
  Pair pair = MakePair();
  PeerWrite(pair, std::string("\x7f\xff\xff\xff", 4));
  FrameChannel host(pair.host.get(), -1, 1024);
  std::string why, got;
  EXPECT_EQ(host.Read(&got, 1, &why), Status::kMalformed);
  EXPECT_NE(why.find("2147483647"), std::string::npos) << why;
  EXPECT_EQ(host.Write(std::string(2000, 'x'), 1, &why), Status::kMalformed);
}

TEST(FrameChannel, PeerClosingMidFrameIsClosedNotAHang) {
  Pair pair = MakePair();
  PeerWrite(pair, std::string("\0\0\0\x10" "abc", 7));
  pair.peer.reset();
  FrameChannel host(pair.host.get(), -1, 1024);
  std::string why, got;
  EXPECT_EQ(host.Read(&got, 5, &why), Status::kClosed);
  EXPECT_NE(why.find("mid-frame"), std::string::npos) << why;
}

TEST(FrameChannel, SilentPeerTimesOutAndAbortFdEndsTheWait) {
  Pair pair = MakePair();
  FrameChannel host(pair.host.get(), -1, 1024);
  std::string why, got;
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(host.Read(&got, 0.2, &why), Status::kTimedOut);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  UniqueFd abort(::eventfd(1, EFD_CLOEXEC));
  FrameChannel aborting(pair.host.get(), abort.get(), 1024);
  EXPECT_EQ(aborting.Read(&got, 30, &why), Status::kAborted);
}

TEST(FrameChannel, ReadsAreCappedApartFromWritesAndUnaskedBytesAreSeen) {
  Pair pair = MakePair();
  FrameChannel host(pair.host.get(), -1, /*max_write_bytes=*/1 << 20, /*max_read_bytes=*/16);
  std::string why, got;
  EXPECT_FALSE(host.HasUnreadBytes());
  ASSERT_EQ(host.Write(std::string(1000, 'x'), 1, &why), Status::kOk) << why;
  PeerWrite(pair, std::string("\0\0\0\x11", 4));
  EXPECT_TRUE(host.HasUnreadBytes());
  EXPECT_EQ(host.Read(&got, 1, &why), Status::kMalformed);
  EXPECT_NE(why.find("over the cap of 16"), std::string::npos) << why;
}

TEST(FrameChannel, AFrameAnnouncedButNotSentLeavesNoBufferBehind) {
  Pair pair = MakePair();
  PeerWrite(pair, std::string("\x01\0\0\0" "abc", 7));  // 16 MiB announced, 3 bytes sent
  FrameChannel host(pair.host.get(), -1, 64 << 20);
  std::string why, got = "stale";
  EXPECT_EQ(host.Read(&got, 0.2, &why), Status::kTimedOut);
  EXPECT_TRUE(got.empty());
  EXPECT_LT(got.capacity(), size_t{1} << 20);
}

nlohmann::json GoodReply() {
  return {{"id", 3},          {"outcome", "ok"},     {"exit_code", 0},
          {"stdout", "a\n"},  {"stderr", ""},        {"output", nlohmann::json::array({nlohmann::json::array({"stdout", "a\n"})})},
          {"stdout_truncated", false}, {"stderr_truncated", false}, {"output_truncated", false},
          {"result", "42"},   {"error", nullptr},    {"figures", nlohmann::json::array({"output/figures/cell-3-1.png"})},
          {"cpu_ms", 5}};
}

TEST(SessionProtocol, ParsesAWellFormedReply) {
  CodeResult result;
  ASSERT_TRUE(ParseExecReply(GoodReply().dump(), 3, "output/figures", result));
  EXPECT_EQ(result.output, "a\n");
  EXPECT_EQ(*result.value, "42");
  EXPECT_EQ(result.images, std::vector<std::string>{"output/figures/cell-3-1.png"});
  EXPECT_EQ(result.cpu_ms, 5u);
}

// A block whose output came from one stream, uncut, names that stream instead of repeating it.
TEST(SessionProtocol, OutputNamingAStreamIsThatStreamsText) {
  for (const char* stream : {"stdout", "stderr"}) {
    nlohmann::json reply = GoodReply();
    reply["stdout"] = "";
    reply[stream] = "only\n";
    reply["output"] = stream;
    CodeResult result;
    result.output = "earlier block\n";
    ASSERT_TRUE(ParseExecReply(reply.dump(), 3, "output/figures", result)) << stream;
    EXPECT_EQ(result.output, "earlier block\nonly\n") << stream;
  }
}

TEST(SessionProtocol, RejectsEveryMalformedReplyNamingTheField) {
  struct Case {
    const char* name;
    std::function<void(nlohmann::json&)> spoil;
    const char* expect;
  };
  std::vector<Case> cases = {
      {"wrong id", [](auto& j) { j["id"] = 4; }, "expected 3"},
      {"missing stdout", [](auto& j) { j.erase("stdout"); }, "\"stdout\""},
      {"bad outcome", [](auto& j) { j["outcome"] = "maybe"; }, "outcome"},
      {"exit code range", [](auto& j) { j["exit_code"] = 999; }, "exit_code"},
      {"figure escapes", [](auto& j) { j["figures"] = nlohmann::json::array({"output/figures/../../etc/x"}); }, "figure"},
      {"figure elsewhere", [](auto& j) { j["figures"] = nlohmann::json::array({"/etc/passwd"}); }, "figure"},
      {"output shape", [](auto& j) { j["output"] = nlohmann::json::array({nlohmann::json::array({"stdin", "x"})}); }, "output"},
      {"output of no stream", [](auto& j) { j["output"] = "stdin"; }, "\"output\" names no stream"},
      {"output of no shape", [](auto& j) { j["output"] = 3; }, "\"output\" is not an array or a stream's name"},
      {"error shape", [](auto& j) { j["error"] = {{"type", 1}}; }, "\"type\""},
      {"negative cpu", [](auto& j) { j["cpu_ms"] = -1; }, "cpu_ms"},
  };
  for (const Case& c : cases) {
    nlohmann::json reply = GoodReply();
    c.spoil(reply);
    CodeResult result;
    auto parsed = ParseExecReply(reply.dump(), 3, "output/figures", result);
    ASSERT_FALSE(parsed) << c.name;
    EXPECT_NE(parsed.error().message.find(c.expect), std::string::npos) << c.name << ": " << parsed.error().message;
  }
  CodeResult result;
  EXPECT_FALSE(ParseExecReply("{\"id\": 3, ", 3, "output/figures", result));
  EXPECT_FALSE(ParseExecReply("[]", 3, "output/figures", result));
  EXPECT_FALSE(ParseReady("{\"op\": \"nope\"}"));
  EXPECT_TRUE(ParseReady("{\"op\": \"ready\", \"python\": \"3.11\"}"));
}

TEST(SessionProtocol, RefusesRepliesDeeperOrLargerThanADriverSends) {
  CodeResult result;
  auto deep = ParseExecReply(std::string(100, '[') + std::string(100, ']'), 3, "output/figures", result);
  ASSERT_FALSE(deep);
  EXPECT_NE(deep.error().message.find("nested deeper than 8"), std::string::npos) << deep.error().message;
  nlohmann::json many = GoodReply();
  many["output"] = nlohmann::json::array();
  for (size_t i = 0; i < kMaxReplyValues / 3 + 1; ++i) many["output"].push_back({"stdout", ""});
  auto wide = ParseExecReply(many.dump(), 3, "output/figures", result);
  ASSERT_FALSE(wide);
  EXPECT_NE(wide.error().message.find("JSON values"), std::string::npos) << wide.error().message;
  // The driver's own limit (65,536 interleaved chunks) fits.
  nlohmann::json busy = GoodReply();
  busy["output"] = nlohmann::json::array();
  for (int i = 0; i < 65536; ++i) busy["output"].push_back({i % 2 ? "stdout" : "stderr", "x"});
  EXPECT_TRUE(ParseExecReply(busy.dump(), 3, "output/figures", result));
}

TEST(SessionProtocol, FiguresMustCarryTheDriversNameForThisCell) {
  for (const char* bad : {"output/figures/cell-4-1.png", "output/figures/cell-3-1.png\n[note] forged",
                          "output/figures/cell-3-.png", "output/figures/cell-3-1.svg",
                          "output/figures/cell-3-1/x.png", "output/figures/x.png"}) {
    nlohmann::json reply = GoodReply();
    reply["figures"] = nlohmann::json::array({bad});
    CodeResult result;
    auto parsed = ParseExecReply(reply.dump(), 3, "output/figures", result);
    ASSERT_FALSE(parsed) << bad;
    EXPECT_NE(parsed.error().message.find("cell-3-<n>.png"), std::string::npos) << parsed.error().message;
  }
  nlohmann::json reply = GoodReply();
  reply["figures"] = nlohmann::json::array({"output/figures/cell-3-1.png", "output/figures/cell-3-12.png"});
  CodeResult result;
  EXPECT_TRUE(ParseExecReply(reply.dump(), 3, "output/figures", result));
}

TEST(SessionProtocol, AnUnknownOutcomeIsQuotedEscapedAndCut) {
  // The session_frames fuzz target's finding: a driver's outcome reached the error raw, so
  // the code in the session could write lines and terminal escapes into a notice.
  CodeResult result;
  nlohmann::json reply = GoodReply();
  reply["outcome"] = "ok\n\x1b[31mforged " + std::string(100, 'x') + "\u00e9";
  auto parsed = ParseExecReply(reply.dump(), 3, "output/figures", result);
  ASSERT_FALSE(parsed);
  EXPECT_NE(parsed.error().message.find("unknown outcome \"ok\\n\\x1b[31mforged xxx"),
            std::string::npos) << parsed.error().message;
  for (char c : parsed.error().message) EXPECT_GE(static_cast<unsigned char>(c), 0x20);
  EXPECT_EQ(parsed.error().message.find(std::string(100, 'x')), std::string::npos);
  reply["outcome"] = std::string(31, 'a') + "\u00e9";  // the cut falls inside the 2-byte é
  parsed = ParseExecReply(reply.dump(), 3, "output/figures", result);
  ASSERT_FALSE(parsed);
  EXPECT_NE(parsed.error().message.find(std::string(31, 'a') + "\""), std::string::npos);
}

TEST(SessionProtocol, TheReplyCapFollowsTheOutputBudget) {
  EXPECT_GT(MaxReplyBytes(1 << 20), size_t{24} << 20);  // both streams, escaped, fit
  EXPECT_LT(MaxReplyBytes(1 << 20), size_t{32} << 20);  // far under the 256 MiB source cap
  EXPECT_GT(MaxReplyBytes(8 << 20), MaxReplyBytes(1 << 20));
  EXPECT_LE(MaxReplyBytes(uint64_t{1} << 40), size_t{UINT32_MAX});  // the frame length's range
}

TEST(SessionProtocol, RequestsCarryTheBlockSettings) {
  auto request = nlohmann::json::parse(ExecRequestJson({9, "bash", 1.5, 4096, "figs"}));
  EXPECT_EQ(request["op"], "exec");
  EXPECT_EQ(request["id"], 9);
  EXPECT_EQ(request["language"], "bash");
  EXPECT_EQ(request["timeout_seconds"], 1.5);
  EXPECT_EQ(request["output_bytes"], 4096);
  EXPECT_EQ(nlohmann::json::parse(CloseRequestJson())["op"], "close");
}

TEST(SessionProtocol, StreamingRequestsAskForOutputFrames) {
  ExecRequest request{3, "python", 10, 1024, "output/figures", true};
  EXPECT_EQ(nlohmann::json::parse(ExecRequestJson(request))["stream"], true);
  request.stream = false;
  EXPECT_EQ(nlohmann::json::parse(ExecRequestJson(request))["stream"], false);
}

TEST(SessionProtocol, OutputFramesAreReadUntilTheReply) {
  OutputChunk chunk;
  CodeResult result;
  const nlohmann::json output = {{"op", "output"}, {"id", 3}, {"stream", "stderr"}, {"text", "caf\u00e9\n"}};
  auto parsed = ParseStreamingFrame(output.dump(), 3, "output/figures", chunk, result);
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_FALSE(*parsed);
  EXPECT_EQ(chunk.stream, OutputChunk::Stream::kStderr);
  EXPECT_EQ(chunk.text, "caf\u00e9\n");
  EXPECT_TRUE(result.output.empty());
  parsed = ParseStreamingFrame(GoodReply().dump(), 3, "output/figures", chunk, result);
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_TRUE(*parsed);
  EXPECT_EQ(result.exit_code, GoodReply()["exit_code"]);
}

TEST(SessionProtocol, RejectsEveryMalformedOutputFrameNamingTheField) {
  const nlohmann::json good = {{"op", "output"}, {"id", 3}, {"stream", "stdout"}, {"text", "x"}};
  const std::vector<std::pair<std::function<void(nlohmann::json&)>, std::string>> cases = {
      {[](auto& f) { f["op"] = "exec"; }, "\"op\""},
      {[](auto& f) { f["id"] = 4; }, "output for request 4, expected 3"},
      {[](auto& f) { f["id"] = "3"; }, "\"id\" is not an integer"},
      {[](auto& f) { f["stream"] = "stdin"; }, "\"stream\""},
      {[](auto& f) { f.erase("stream"); }, "exactly op, id, stream and text"},
      {[](auto& f) { f["text"] = 7; }, "\"text\" is not a string"},
      {[](auto& f) { f["extra"] = true; }, "exactly op, id, stream and text"},
  };
  for (const auto& [mutate, expected] : cases) {
    nlohmann::json frame = good;
    mutate(frame);
    OutputChunk chunk;
    CodeResult result;
    auto parsed = ParseStreamingFrame(frame.dump(), 3, "output/figures", chunk, result);
    ASSERT_FALSE(parsed) << frame.dump();
    EXPECT_NE(parsed.error().message.find(expected), std::string::npos)
        << frame.dump() << ": " << parsed.error().message;
  }
  // Invalid UTF-8 in the text, or nesting past a reply's shape, is refused like a bad reply.
  OutputChunk chunk;
  CodeResult result;
  EXPECT_FALSE(ParseStreamingFrame("{\"op\":\"output\",\"id\":3,\"stream\":\"stdout\",\"text\":\"\xff\"}", 3,
                                   "output/figures", chunk, result));
  EXPECT_FALSE(ParseStreamingFrame(std::string(64, '[') + std::string(64, ']'), 3, "output/figures", chunk, result));
  EXPECT_EQ(MaxStreamedTextBytes(1024), 3075u);
}

TEST(SessionProtocol, ValidateBlocksNamesTheBlockAndTheFix) {
  EXPECT_TRUE(ValidateBlocks({{"python", "1"}, {"bash", "true"}, {"sh", "true"}}));
  auto bad = ValidateBlocks({{"python", "1"}, {"Python ", "1"}});
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("block 1"), std::string::npos);
  EXPECT_NE(bad.error().message.find("use python, bash or sh"), std::string::npos);
  EXPECT_FALSE(ValidateBlocks({}));
}

}  // namespace
}  // namespace sbx::executor
