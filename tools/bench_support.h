// What the executor benchmarks (sbx_pool_bench, sbx_growth_bench) share.
#pragma once

#include <cstdio>
#include <string>

#include "sandbox/image/image.h"
#include "src/executor/code_executor.h"

namespace sbx::bench {

// True when `result` ran and exited 0; otherwise says why on stderr.
inline bool ExecutionOk(const Result<executor::CodeResult>& result) {
  if (!result) {
    std::fprintf(stderr, "error: %s\n", result.error().ToString().c_str());
    return false;
  }
  if (result->exit_code != 0) {
    std::fprintf(stderr, "failed (exit %d): %s\n", result->exit_code, result->output.substr(0, 2000).c_str());
    return false;
  }
  return true;
}

// `image` as given, or the default image's directory when empty; "" (and why on stderr) when
// there is none.
inline std::string ImageOrDefault(const std::string& image) {
  if (!image.empty()) return image;
  auto found = FindDefaultImage();
  if (!found) {
    std::fprintf(stderr, "image: %s\n", found.error().ToString().c_str());
    return "";
  }
  return found->path;
}

}  // namespace sbx::bench
