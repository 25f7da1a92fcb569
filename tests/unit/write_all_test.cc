// WriteAll: the whole buffer through short writes, and an error where no write can progress.
#include "base/write_all.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <pthread.h>

#include <chrono>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "base/unique_fd.h"

namespace sbx {
namespace {

struct Pipe {
  UniqueFd read, write;
  Pipe() {
    int fds[2];
    EXPECT_EQ(::pipe2(fds, O_CLOEXEC), 0);
    read = UniqueFd(fds[0]);
    write = UniqueFd(fds[1]);
  }
};

void Nothing(int) {}

// A blocking pipe write returns short only when a signal interrupts it after part of the data
// went in: the reader starts late, and a signal arrives while the pipe is full.
TEST(WriteAll, AWriteCutShortByASignalIsResumed) {
  Pipe pipe;
  ASSERT_LT(::fcntl(pipe.write.get(), F_GETPIPE_SZ), 1 << 20);
  std::string data(1 << 20, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>('a' + i % 26);
  struct sigaction interrupt {}, previous {};
  interrupt.sa_handler = Nothing;  // no SA_RESTART: the write returns what it wrote so far
  ASSERT_EQ(::sigaction(SIGUSR1, &interrupt, &previous), 0);
  const pthread_t writer = ::pthread_self();
  std::string received;
  std::thread reader([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ::pthread_kill(writer, SIGUSR1);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    char buffer[4096];
    ssize_t n;
    while ((n = ::read(pipe.read.get(), buffer, sizeof(buffer))) > 0) {
      received.append(buffer, static_cast<size_t>(n));
    }
  });
  EXPECT_TRUE(WriteAll(pipe.write.get(), data));
  pipe.write.reset();
  reader.join();
  ::sigaction(SIGUSR1, &previous, nullptr);
  EXPECT_EQ(received.size(), data.size());
  EXPECT_TRUE(received == data);
}

TEST(WriteAll, AReaderThatLeftIsAnError) {
  Pipe pipe;
  pipe.read.reset();
  struct sigaction ignore {}, previous {};
  ignore.sa_handler = SIG_IGN;
  ASSERT_EQ(::sigaction(SIGPIPE, &ignore, &previous), 0);
  auto wrote = WriteAll(pipe.write.get(), "lost");
  ::sigaction(SIGPIPE, &previous, nullptr);
  ASSERT_FALSE(wrote);
  EXPECT_NE(wrote.error().ToString().find("write"), std::string::npos) << wrote.error().ToString();
}

TEST(WriteAll, NothingToWriteTouchesNoDescriptor) { EXPECT_TRUE(WriteAll(-1, "")); }

TEST(WriteAll, ABadDescriptorIsAnError) { EXPECT_FALSE(WriteAll(-1, "x")); }

}  // namespace
}  // namespace sbx
