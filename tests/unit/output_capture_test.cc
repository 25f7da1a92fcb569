// Unit tests for head-and-tail output capture.
#include "sandbox/launch/output_capture.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace sbx {
namespace {

TEST(OutputCapture, KeepsEverythingUnderTheCap) {
  OutputCapture capture(16, nullptr);
  capture.Append("hello ", 6);
  capture.Append("world", 5);
  EXPECT_FALSE(capture.truncated());
  EXPECT_EQ(capture.Text(), "hello world");
}

TEST(OutputCapture, KeepsHeadAndTailWhenOverTheCap) {
  OutputCapture capture(10, nullptr);
  std::string data;
  for (int i = 0; i < 100; ++i) data += static_cast<char>('a' + i % 26);
  // Feed in odd-sized chunks so the ring wraps at different offsets.
  for (size_t pos = 0; pos < data.size(); pos += 7) capture.Append(data.data() + pos, std::min<size_t>(7, data.size() - pos));
  EXPECT_TRUE(capture.truncated());
  EXPECT_EQ(capture.total_bytes(), 100u);
  EXPECT_EQ(capture.Text(), data.substr(0, 5) + "\n[sbx: 90 bytes cut]\n" + data.substr(95));
}

TEST(OutputCapture, ChunkLargerThanTail) {
  OutputCapture capture(8, nullptr);
  std::string data(1000, 'x');
  data += "TAIL";
  capture.Append(data.data(), data.size());
  EXPECT_EQ(capture.Text().substr(capture.Text().size() - 4), "TAIL");
}

TEST(OutputCapture, TailRingWrapsCorrectlyWithChunksOfEverySize) {
  // Against a reference: the last tail_cap bytes of everything appended.
  for (size_t chunk = 1; chunk <= 13; ++chunk) {
    OutputCapture capture(20, nullptr);
    std::string all;
    for (int i = 0; i < 97; i += static_cast<int>(chunk)) {
      std::string piece;
      for (size_t j = 0; j < chunk; ++j) piece += static_cast<char>('A' + (i + j) % 26);
      capture.Append(piece.data(), piece.size());
      all += piece;
    }
    std::string text = capture.Text();
    EXPECT_EQ(text.substr(0, 10), all.substr(0, 10)) << chunk;
    EXPECT_EQ(text.substr(text.size() - 10), all.substr(all.size() - 10)) << chunk;
  }
}

}  // namespace
}  // namespace sbx
