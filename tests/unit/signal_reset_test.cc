// Reading which signals the child must put back to their defaults from /proc/<pid>/status.
#include "sandbox/launch/signal_reset.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <string>

#include "base/small_file.h"

namespace sbx {
namespace {

constexpr char kStatus[] =
    "Name:\tsbx\nThreads:\t1\nSigQ:\t0/95836\nSigPnd:\t0000000000000000\nShdPnd:\t0000000000000000\n"
    "SigBlk:\tfffffffe7ffbfeff\nSigIgn:\t0000000000001001\nSigCgt:\t8000000000014a02\n"
    "CapInh:\t0000000000000000\n";

TEST(SignalReset, ReadsTheIgnoredAndTheHandledSignals) {
  SignalDispositions parsed;
  ASSERT_TRUE(ParseSignalDispositions(kStatus, &parsed));
  EXPECT_EQ(parsed.ignored, 0x1001u);  // SIGHUP and SIGPIPE
  EXPECT_EQ(parsed.caught, 0x8000000000014a02u);
}

TEST(SignalReset, RefusesAStatusWithoutBothMasks) {
  SignalDispositions parsed{1, 2};
  EXPECT_FALSE(ParseSignalDispositions("SigIgn:\t0000000000001001\n", &parsed));
  EXPECT_FALSE(ParseSignalDispositions("SigCgt:\t0000000000001001\n", &parsed));
  EXPECT_FALSE(ParseSignalDispositions("", &parsed));
  EXPECT_EQ(parsed.ignored, 1u);  // untouched on failure
  EXPECT_EQ(parsed.caught, 2u);
}

TEST(SignalReset, RefusesMasksThatAreNotSixteenHexDigits) {
  SignalDispositions parsed;
  EXPECT_FALSE(ParseSignalDispositions("SigIgn:\t00000000000010\nSigCgt:\t0000000000000000\n", &parsed));
  EXPECT_FALSE(ParseSignalDispositions("SigIgn:\t000000000000100x\nSigCgt:\t0000000000000000\n", &parsed));
  EXPECT_FALSE(ParseSignalDispositions("SigIgn:\t00000000000010000\nSigCgt:\t0000000000000000\n", &parsed));
  EXPECT_FALSE(ParseSignalDispositions("SigIgn:\t0000000000001000", &parsed));
}

TEST(SignalReset, OnlyAKeyAtTheStartOfALineCounts) {
  SignalDispositions parsed;
  ASSERT_TRUE(ParseSignalDispositions(
      "Name:\tXSigIgn:\tffffffffffffffff\nSigIgn:\t0000000000000002\nSigCgt:\t0000000000000004\n", &parsed));
  EXPECT_EQ(parsed.ignored, 2u);
  EXPECT_EQ(parsed.caught, 4u);
}

// This process's own status, read the way the child reads it, shows what it set.
TEST(SignalReset, ReadsThisProcessesStatus) {
  auto saved_hup = ::signal(SIGHUP, SIG_IGN);
  auto status = ReadSmallFile("/proc/self/status");
  ::signal(SIGHUP, saved_hup);
  ASSERT_TRUE(status);
  SignalDispositions parsed;
  ASSERT_TRUE(ParseSignalDispositions(*status, &parsed));
  EXPECT_NE(parsed.ignored & (uint64_t{1} << (SIGHUP - 1)), 0u);
}

}  // namespace
}  // namespace sbx
