// The session driver's protocol, host side: frames with deadlines and caps, strict replies.
#include <gtest/gtest.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <nlohmann/json.hpp>

#include "sandbox/unique_fd.h"
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

TEST(SessionProtocol, RequestsCarryTheBlockSettings) {
  auto request = nlohmann::json::parse(ExecRequestJson({9, "bash", 1.5, 4096, "figs"}));
  EXPECT_EQ(request["op"], "exec");
  EXPECT_EQ(request["id"], 9);
  EXPECT_EQ(request["language"], "bash");
  EXPECT_EQ(request["timeout_seconds"], 1.5);
  EXPECT_EQ(request["output_bytes"], 4096);
  EXPECT_EQ(nlohmann::json::parse(CloseRequestJson())["op"], "close");
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
