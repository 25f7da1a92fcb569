// A directory of the fuzz process's own that targets which write files (manifest staging,
// archive restore) empty again after every input; nothing else is ever written.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <string>

#include "tests/fuzz/fuzz_check.h"

namespace sbx::fuzz {

class ScratchDir {
 public:
  ScratchDir() {
    std::string pattern = std::filesystem::temp_directory_path() / "sbx-fuzz-XXXXXX";
    SBX_FUZZ_CHECK(::mkdtemp(pattern.data()) != nullptr);
    path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  // A fresh empty subdirectory `name`, with whatever the last input left removed.
  std::string Fresh(const std::string& name) {
    const std::filesystem::path dir = path_ / name;
    std::filesystem::remove_all(dir);
    std::filesystem::create_directory(dir);
    return dir;
  }
  void Remove(const std::string& name) { std::filesystem::remove_all(path_ / name); }
  // The names directly in the scratch directory: only those the target made.
  size_t Entries() const {
    size_t count = 0;
    for (const auto& entry : std::filesystem::directory_iterator(path_))
      count += !entry.path().empty();
    return count;
  }

 private:
  std::filesystem::path path_;
};

}  // namespace sbx::fuzz
