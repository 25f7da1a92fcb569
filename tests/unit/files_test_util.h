// Temp-directory fixtures shared by the manifest, copy-out and workspace archive tests.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>

#include "base/remove_tree.h"
#include "sandbox/isolation/userns.h"
#include "sandbox/workspace/manifest.h"
#include "sandbox/workspace/workspace.h"

namespace sbx::testing {

// A fresh directory under /tmp, removed (without following symlinks) at the end of the test.
class TempDir {
 public:
  TempDir() {
    std::string templ = "/tmp/sbx-files-test-XXXXXX";
    EXPECT_NE(::mkdtemp(templ.data()), nullptr);
    path_ = templ;
  }
  ~TempDir() { (void)RemoveTree(path_); }
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

inline void WriteFile(const std::string& path, const std::string& contents, mode_t mode = 0644) {
  std::ofstream(path, std::ios::binary) << contents;
  ::chmod(path.c_str(), mode);
}

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline bool Exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

inline mode_t ModeOf(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 ? st.st_mode : 0;
}

inline void MakeSparseFile(const std::string& path, off_t size) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, size), 0);
  ::close(fd);
}

// The owner staged files get: the sandbox user's host id as root, else the caller.
inline FileOwner TestOwner() {
  if (::geteuid() == 0) return FileOwner{kRootModeHostId, kRootModeHostId};
  return FileOwner{::geteuid(), ::getegid()};
}

}  // namespace sbx::testing
