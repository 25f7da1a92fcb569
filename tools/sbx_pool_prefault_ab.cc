// Measures what the warm pool's pre-fault buys on a machine whose load varies: one process, two
// pools (one with PoolOptions::prefault_budget_bytes = --budget MiB, default the pool's 4, and
// first_execution_prefault_bytes = --first-execution MiB, default the pool's 16; the other with
// both 0: off), acquisitions alternating between them, so both see the same load. Each sample is
// acquire + the describe, end to end.
//
//   build/sbx_pool_prefault_ab [--image DIR] [--pairs N] [--budget MiB] [--first-execution MiB]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "sandbox/image/image.h"
#include "src/executor/session_pool.h"

namespace {

using Clock = std::chrono::steady_clock;

const char* const kCode = "import pandas as pd; pd.DataFrame({\"a\": range(1000)}).describe()";

double Ms(Clock::time_point since) {
  return std::chrono::duration<double, std::milli>(Clock::now() - since).count();
}

}  // namespace

int main(int argc, char** argv) {
  std::string image;
  int pairs = 40;
  size_t budget = sbx::executor::kDefaultPrefaultBudgetBytes;
  size_t first_execution = sbx::executor::kDefaultFirstExecutionPrefaultBytes;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--image") image = argv[i + 1];
    else if (flag == "--pairs") pairs = std::max(1, std::atoi(argv[i + 1]));
    else if (flag == "--budget") budget = static_cast<size_t>(std::atof(argv[i + 1]) * (1 << 20));
    else if (flag == "--first-execution") first_execution = static_cast<size_t>(std::atof(argv[i + 1]) * (1 << 20));
  }
  std::unique_ptr<sbx::executor::SessionPool> pools[2];
  const char* const names[2] = {"pre-faulted", "not pre-faulted"};
  for (int p = 0; p < 2; ++p) {
    sbx::executor::PoolOptions options;
    options.image_dir = image;
    options.warm_sessions = 2;
    options.prefault_budget_bytes = p == 0 ? budget : 0;
    options.first_execution_prefault_bytes = p == 0 ? first_execution : 0;
    auto pool = sbx::executor::SessionPool::Create(options);
    if (!pool) {
      std::fprintf(stderr, "pool: %s\n", pool.error().ToString().c_str());
      return 1;
    }
    pools[p] = std::move(*pool);
  }
  std::vector<double> samples[2];
  for (int i = 0; i < pairs; ++i) {
    for (int p = 0; p < 2; ++p) {
      // Both pools idle before each sample: warm sessions ready, nothing being torn down.
      pools[p]->WaitForWarm(2, 10);
      pools[p]->WaitForRetired(10);
      auto start = Clock::now();
      auto session = pools[p]->Acquire();
      if (!session) {
        std::fprintf(stderr, "acquire: %s\n", session.error().ToString().c_str());
        return 1;
      }
      auto result = (*session)->Execute({{"python", kCode}});
      if (!result || result->exit_code != 0) {
        std::fprintf(stderr, "%s: the describe failed\n", names[p]);
        return 1;
      }
      samples[p].push_back(Ms(start));
    }
  }
  for (int p = 0; p < 2; ++p) {
    std::vector<double>& s = samples[p];
    std::sort(s.begin(), s.end());
    std::printf("%-16s acquire + describe: median %7.2f ms   p10 %7.2f   p90 %7.2f   (n=%zu)\n", names[p],
                s[s.size() / 2], s[s.size() / 10], s[s.size() * 9 / 10], s.size());
  }
  return 0;
}
