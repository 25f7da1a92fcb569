// OutputForwarder: order, the lazily started thread, and the note about dropped output.
#include "sandbox/launch/output_forwarder.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <string>

#include <gtest/gtest.h>

namespace sbx {
namespace {

size_t ThreadCount() {
  size_t count = 0;
  if (DIR* tasks = ::opendir("/proc/self/task")) {
    while (dirent* entry = ::readdir(tasks)) count += entry->d_name[0] != '.';
    ::closedir(tasks);
  }
  return count;
}

std::string ReadAll(int fd) {
  std::string text;
  char buffer[4096];
  ssize_t n;
  while ((n = ::read(fd, buffer, sizeof(buffer))) > 0) text.append(buffer, static_cast<size_t>(n));
  return text;
}

struct PipeEnds {
  int read = -1, write = -1;
  PipeEnds() {
    int fds[2];
    EXPECT_EQ(::pipe2(fds, O_CLOEXEC), 0);
    read = fds[0];
    write = fds[1];
  }
  ~PipeEnds() {
    if (read >= 0) ::close(read);
    if (write >= 0) ::close(write);
  }
};

TEST(OutputForwarder, WritesChunksInOrderAndStartsItsThreadOnlyWithTheFirst) {
  PipeEnds pipe;
  const size_t threads_before = ThreadCount();
  OutputForwarder forwarder(pipe.write, 1 << 20);
  EXPECT_EQ(ThreadCount(), threads_before);  // nothing printed yet: no thread
  forwarder.Push("one ", 4);
  EXPECT_EQ(ThreadCount(), threads_before + 1);
  forwarder.Push("two", 3);
  forwarder.Close();
  EXPECT_EQ(ThreadCount(), threads_before);
  ::close(pipe.write);
  pipe.write = -1;
  EXPECT_EQ(ReadAll(pipe.read), "one two");
  EXPECT_EQ(forwarder.dropped_bytes(), 0u);
}

TEST(OutputForwarder, ASilentRunClosesWithoutAThreadOrAWord) {
  PipeEnds pipe;
  {
    OutputForwarder forwarder(pipe.write, 16);
    forwarder.Close();
    forwarder.Close();  // idempotent
  }
  ::close(pipe.write);
  pipe.write = -1;
  EXPECT_EQ(ReadAll(pipe.read), "");
}

TEST(OutputForwarder, OutputBeyondTheQueueIsCountedAndNoted) {
  PipeEnds pipe;
  OutputForwarder forwarder(pipe.write, 8);
  forwarder.Push("0123456789abcdef", 16);  // more than may wait at once: dropped
  forwarder.Close();
  ::close(pipe.write);
  pipe.write = -1;
  EXPECT_EQ(forwarder.dropped_bytes(), 16u);
  EXPECT_NE(ReadAll(pipe.read).find("[sbx: 16 bytes not shown"), std::string::npos);
}

}  // namespace
}  // namespace sbx
