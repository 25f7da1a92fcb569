// Benchmarks the warm pool beside the cold path in one run: fresh-session latency (cold
// SessionExecutor vs pooled), pooled executions per second, idle pooled session memory, and
// for reference bare python3 of the image and the floor of any pool here (kForkFloorScript).
//
//   build/sbx_pool_bench [--image DIR] [--iterations N] [--warm N] [--seconds S] [--rounds R]
//                        [--prefault-mib M] [--first-execution-prefault-mib M]
//                        [--refill-deferral-ms MS] [--threads 1,2,4]
//
// --prefault-mib sets PoolOptions::prefault_budget_bytes (default the pool's 4 MiB; 0 turns the
// pre-fault while a session is prepared off, 64 takes every page learned), to see what it
// trades: first-execution latency for idle memory. --first-execution-prefault-mib sets
// PoolOptions::first_execution_prefault_bytes (default 16 MiB; 0 leaves the learned pages past
// the first budget to faults). --refill-deferral-ms sets PoolOptions::refill_deferral_seconds (default
// 500 ms; 0 refills while sessions execute), for its A/B. --threads sets the client threads of
// the throughput lines (and the floor's process counts); each pooled line prints its ratio to
// the floor measured in the same run. The pooled lines alternate with the floor's: --rounds
// rounds (default 3) of the floor's pre-forked describes and then as many acquire + describe
// (N / R each, at least 5), and per thread count the floor's rate and then the pool's for S
// seconds each, so that a machine whose speed drifts within the run charges both alike; each
// ratio line gives the median of the rounds' ratios and their range.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/executor/executors.h"
#include "src/executor/process_memory.h"
#include "src/executor/session_pool.h"
#include "tools/bench_support.h"

namespace {

using sbx::executor::CodeBlock;
using sbx::executor::PrivateMemoryBytes;
using Clock = std::chrono::steady_clock;

const char* const kCode = "import pandas as pd; pd.DataFrame({\"a\": range(1000)}).describe()";

// The floor of any pool on this machine, without sbx: the image's Python in the zygote's state
// (its imports, the pool's warm-up code, everything frozen out of the collector's reach)
// forks children itself. A child forked ahead and told to go answers the
// describe (and its repr, as the driver returns it) after its copy-on-write faults; a
// fork + describe + exit loop bounds the rate on one and two cores.
const char* const kForkFloorScript = R"py(
import gc, os, sys, time
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot, numpy, pandas as pd, scipy
exec(compile(WARMUP, "<sbx warm-up>", "exec"), {"__name__": "__sbx_warmup__"})
CODE = 'pd.DataFrame({"a": range(1000)}).describe()'
repr(eval(CODE))
gc.collect(); gc.freeze()

def answer_in_preforked_child():
    go_r, go_w = os.pipe(); done_r, done_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.read(go_r, 1); repr(eval(CODE)); os.write(done_w, b"x"); os._exit(0)
    time.sleep(0.02)
    start = time.perf_counter(); os.write(go_w, b"x"); os.read(done_r, 1)
    elapsed = (time.perf_counter() - start) * 1000
    os.waitpid(pid, 0)
    for fd in (go_r, go_w, done_r, done_w): os.close(fd)
    return elapsed

def forks_per_second(workers, seconds):
    deadline = time.perf_counter() + seconds
    counts_r, counts_w = os.pipe()  # each loop writes its count: an exit status caps at 255
    loops = []
    for _ in range(workers):
        loop = os.fork()
        if loop == 0:
            count = 0
            while time.perf_counter() < deadline:
                pid = os.fork()
                if pid == 0:
                    repr(eval(CODE)); os._exit(0)
                os.waitpid(pid, 0); count += 1
            os.write(counts_w, b"%d\n" % count); os._exit(0)
        loops.append(loop)
    os.close(counts_w)
    for loop in loops: os.waitpid(loop, 0)
    with os.fdopen(counts_r) as counts:
        return sum(int(line) for line in counts) / seconds

for _ in range(DESCRIBE_SAMPLES):
    print("floor-describe-ms %f" % answer_in_preforked_child(), file=sys.stderr)
for workers in WORKERS:
    print("floor-rate %d %f" % (workers, forks_per_second(workers, SECONDS)), file=sys.stderr)
)py";

// The image's python3 running `code` (SpawnImagePython). Returns its wait status, or -1 if it
// could not be started.
int RunImagePython(const std::string& image, const char* code) {
  pid_t pid = sbx::bench::SpawnImagePython(image, code);
  int status = 0;
  return pid > 0 && waitpid(pid, &status, 0) == pid ? status : -1;
}

// What the floor script reports on its stderr, for the ratios of the pooled lines.
struct Floor {
  std::vector<double> describe_ms;  // describe in a pre-forked child, each sample
  std::map<int, double> per_second;  // fork + describe + exit, by process count
};

// Runs kForkFloorScript: `describe_samples` pre-forked describes, and the fork + describe + exit
// rate for `seconds` with each of `workers` as its process count. Its figures come back through
// a pipe on its stderr.
Floor RunFloor(const std::string& image, int describe_samples, const std::vector<int>& workers, double seconds) {
  Floor floor;
  std::string counts;
  for (int count : workers) counts += std::to_string(count) + ",";
  // A JSON string is a Python string literal too.
  const std::string script = "DESCRIBE_SAMPLES = " + std::to_string(describe_samples) + "\nWORKERS = (" +
                             counts + ")\nSECONDS = " + std::to_string(seconds) + "\nWARMUP = " +
                             nlohmann::json(sbx::executor::kDefaultZygoteWarmup).dump() + "\n" + kForkFloorScript;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return floor;
  const pid_t pid = sbx::bench::SpawnImagePython(image, script, -1, -1, fds[1]);
  close(fds[1]);
  if (pid < 0) {
    close(fds[0]);
    return floor;
  }
  std::string report;
  char buffer[4096];
  for (ssize_t n; (n = read(fds[0], buffer, sizeof buffer)) > 0;) report.append(buffer, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (status != 0) std::fprintf(stderr, "floor: the image's python3 failed (status 0x%x):\n%s", status, report.c_str());
  std::istringstream lines(report);
  for (std::string line; std::getline(lines, line);) {
    double value = 0;
    int count = 0;
    if (std::sscanf(line.c_str(), "floor-describe-ms %lf", &value) == 1) floor.describe_ms.push_back(value);
    else if (std::sscanf(line.c_str(), "floor-rate %d %lf", &count, &value) == 2) floor.per_second[count] = value;
  }
  return floor;
}

double Ms(Clock::time_point since) {
  return std::chrono::duration<double, std::milli>(Clock::now() - since).count();
}

// Prints the median and p90 of `samples`.
void Report(const char* what, std::vector<double> samples) {
  if (samples.empty()) {
    std::printf("%-44s no samples\n", what);
    return;
  }
  std::sort(samples.begin(), samples.end());
  auto at = [&](double q) { return samples[std::min(samples.size() - 1, static_cast<size_t>(q * samples.size()))]; };
  std::printf("%-44s median %8.2f ms   p90 %8.2f ms   (n=%zu)\n", what, at(0.5), at(0.9), samples.size());
}

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

// "0.97x the floor (0.91-1.01)": the median of the rounds' ratios to the floor, and their range.
std::string RatioOverRounds(const std::vector<double>& ratios) {
  if (ratios.empty()) return "no rounds";
  const auto [lowest, highest] = std::minmax_element(ratios.begin(), ratios.end());
  char text[64];
  std::snprintf(text, sizeof text, "%.2fx the floor (%.2f-%.2f)", Median(ratios), *lowest, *highest);
  return text;
}

// "1,2,4" -> {1, 2, 4}; counts outside 1..64 are dropped.
std::vector<int> ParseCounts(const std::string& text) {
  std::vector<int> counts;
  std::istringstream items(text);
  for (std::string item; std::getline(items, item, ',');) {
    int count = std::atoi(item.c_str());
    if (count >= 1 && count <= 64) counts.push_back(count);
  }
  return counts;
}

}  // namespace

int main(int argc, char** argv) {
  std::string image;
  int iterations = 30;
  size_t warm = 4;
  size_t prefault_budget = sbx::executor::kDefaultPrefaultBudgetBytes;
  size_t first_execution_prefault = sbx::executor::kDefaultFirstExecutionPrefaultBytes;
  double seconds = 5;
  int rounds = 3;
  std::vector<int> thread_counts = {1, 2, 4};
  double refill_deferral_seconds = sbx::executor::PoolOptions{}.refill_deferral_seconds;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--image") image = argv[i + 1];
    else if (flag == "--iterations") iterations = std::atoi(argv[i + 1]);
    else if (flag == "--warm") warm = static_cast<size_t>(std::atoi(argv[i + 1]));
    else if (flag == "--seconds") seconds = std::atof(argv[i + 1]);
    else if (flag == "--rounds") rounds = std::max(1, std::atoi(argv[i + 1]));
    else if (flag == "--refill-deferral-ms") refill_deferral_seconds = std::atof(argv[i + 1]) / 1000;
    else if (flag == "--threads") thread_counts = ParseCounts(argv[i + 1]);
    else if (flag == "--prefault-mib") prefault_budget = static_cast<size_t>(std::atof(argv[i + 1]) * (1 << 20));
    else if (flag == "--first-execution-prefault-mib")
      first_execution_prefault = static_cast<size_t>(std::atof(argv[i + 1]) * (1 << 20));
  }
  const std::vector<CodeBlock> blocks = {{"python", kCode}};
  std::printf("code: %s\n\n", kCode);

  image = sbx::bench::ImageOrDefault(image);
  if (image.empty()) return 1;
  // Bare python3 of the image (the host has no pandas), only chrooted: no namespaces, no limits.
  std::vector<double> bare;
  for (int i = 0; i < std::max(5, iterations / 3); ++i) {
    auto start = Clock::now();
    if (RunImagePython(image, kCode) < 0) break;
    bare.push_back(Ms(start));
  }
  Report("bare python3 -c (chroot into the image)", bare);

  // Cold: a new SessionExecutor (a fresh sandbox and interpreter) per session.
  std::vector<double> cold;
  for (int i = 0; i < std::max(5, iterations / 3); ++i) {
    sbx::executor::ExecutorOptions options;
    options.image_dir = image;
    auto start = Clock::now();
    auto session = sbx::executor::SessionExecutor::Create(options);
    if (!session) {
      std::fprintf(stderr, "cold: %s\n", session.error().ToString().c_str());
      return 1;
    }
    if (!sbx::bench::ExecutionOk((*session)->Execute(blocks))) return 1;
    cold.push_back(Ms(start));
  }
  Report("cold SessionExecutor: create + describe", cold);

  // Pooled: acquire a warm session + describe, with the pool refilled between samples.
  std::unique_ptr<sbx::executor::SessionPool> pool;
  {
    sbx::executor::PoolOptions pool_options;
    pool_options.image_dir = image;
    pool_options.warm_sessions = warm;
    pool_options.prefault_budget_bytes = prefault_budget;
    pool_options.first_execution_prefault_bytes = first_execution_prefault;
    pool_options.refill_deferral_seconds = refill_deferral_seconds;
    pool.reset();
    auto pool_start = Clock::now();
    auto created = sbx::executor::SessionPool::Create(pool_options);
    if (!created) {
      std::fprintf(stderr, "pool: %s\n", created.error().ToString().c_str());
      return 1;
    }
    pool = std::move(*created);
    std::printf("\n[pool, %zu warm sessions, pre-fault budgets %.1f MiB while prepared and %.1f MiB at the first "
                "execution: %zu and %zu pages learned, refill deferral %.0f ms]\n",
                warm, prefault_budget / 1048576.0, first_execution_prefault / 1048576.0, pool->prefault_pages(),
                pool->first_execution_prefault_pages(), refill_deferral_seconds * 1000);
    std::printf("%-44s %8.2f ms\n", "pool start (zygote imports + warm-up)", Ms(pool_start));
    pool->WaitForWarm(warm, 30);
    // Each round: the floor's pre-forked describes, then as many acquire + describe.
    const int per_round = std::max(5, iterations / rounds);
    std::vector<double> floor_describe, pooled, acquire_only, idle_memory, ratios;
    for (int round = 0; round < rounds; ++round) {
      pool->WaitForWarm(warm, 10);  // no refill competes with the floor's round
      const Floor round_floor = RunFloor(image, per_round, {}, 0);
      if (round_floor.describe_ms.empty()) {
        std::fprintf(stderr, "floor: no describe samples\n");
        return 1;
      }
      std::vector<double> round_pooled;
      for (int i = 0; i < per_round; ++i) {
        pool->WaitForWarm(warm, 5);
        auto start = Clock::now();
        auto session = pool->Acquire();
        if (!session) {
          std::fprintf(stderr, "acquire: %s\n", session.error().ToString().c_str());
          return 1;
        }
        acquire_only.push_back(Ms(start));
        idle_memory.push_back(PrivateMemoryBytes((*session)->host_pid()) / 1048576.0);
        if (!sbx::bench::ExecutionOk((*session)->Execute(blocks))) return 1;
        round_pooled.push_back(Ms(start));
      }
      ratios.push_back(Median(round_pooled) / Median(round_floor.describe_ms));
      floor_describe.insert(floor_describe.end(), round_floor.describe_ms.begin(), round_floor.describe_ms.end());
      pooled.insert(pooled.end(), round_pooled.begin(), round_pooled.end());
    }
    Report("floor: describe in a pre-forked child", floor_describe);
    Report("pooled: acquire only", acquire_only);
    Report("pooled: acquire + describe", pooled);
    std::printf("%-44s %s, %d rounds of %d\n", "pooled: acquire + describe, per round",
                RatioOverRounds(ratios).c_str(), rounds, per_round);
    std::sort(idle_memory.begin(), idle_memory.end());
    std::printf("%-44s median %8.2f MiB  max %6.2f MiB (n=%zu)\n", "idle pooled session, private memory",
                idle_memory[idle_memory.size() / 2], idle_memory.back(), idle_memory.size());
  }
  auto* const pool_ptr = &pool;
  // Idle memory: warm sessions that have not run anything, and ones that ran the describe.
  {
    std::vector<std::unique_ptr<sbx::executor::PooledSessionExecutor>> held;
    (*pool_ptr)->WaitForWarm(warm, 10);
    std::vector<double> idle, used;
    for (size_t i = 0; i < std::max<size_t>(warm, 4); ++i) {
      auto session = (*pool_ptr)->Acquire();
      if (!session) break;
      idle.push_back(PrivateMemoryBytes((*session)->host_pid()) / 1048576.0);
      held.push_back(std::move(*session));
    }
    for (auto& session : held) {
      if (!sbx::bench::ExecutionOk(session->Execute(blocks))) return 1;
      used.push_back(PrivateMemoryBytes(session->host_pid()) / 1048576.0);
    }
    std::sort(idle.begin(), idle.end());
    std::sort(used.begin(), used.end());
    if (!idle.empty())
      std::printf("%-44s median %8.2f MiB  max %6.2f MiB (n=%zu)\n", "idle pooled session, private memory",
                  idle[idle.size() / 2], idle.back(), idle.size());
    if (!used.empty())
      std::printf("%-44s median %8.2f MiB  max %6.2f MiB (n=%zu)\n", "after one describe, private memory",
                  used[used.size() / 2], used.back(), used.size());
  }

  // Throughput: fresh isolated session + describe + close, back to back, per thread count,
  // each round right after the floor's rate with as many processes.
  auto pooled_rate = [&](int threads, bool& failed) {
    std::atomic<long> done{0};
    std::atomic<bool> any_failed{false};
    auto start = Clock::now();
    auto deadline = start + std::chrono::duration<double>(seconds);
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) {
      workers.emplace_back([&] {
        while (Clock::now() < deadline && !any_failed) {
          auto session = (*pool_ptr)->Acquire();
          if (!session || !sbx::bench::ExecutionOk((*session)->Execute(blocks))) {
            any_failed = true;
            return;
          }
          session->reset();
          ++done;
        }
      });
    }
    for (auto& worker : workers) worker.join();
    failed = failed || any_failed;
    return done / (Ms(start) / 1000);
  };
  for (int threads : thread_counts) {
    std::vector<double> floor_rates, pool_rates, ratios;
    bool failed = false;
    for (int round = 0; round < rounds && !failed; ++round) {
      (*pool_ptr)->WaitForWarm(warm, 10);  // no refill competes with the floor's round
      const Floor round_floor = RunFloor(image, /*describe_samples=*/0, {threads}, seconds);
      auto floor_rate = round_floor.per_second.find(threads);
      if (floor_rate == round_floor.per_second.end() || !(floor_rate->second > 0)) {
        std::fprintf(stderr, "floor: no rate for %d processes\n", threads);
        return 1;
      }
      const double rate = pooled_rate(threads, failed);
      floor_rates.push_back(floor_rate->second);
      pool_rates.push_back(rate);
      ratios.push_back(rate / floor_rate->second);
    }
    std::printf("%-44s %8.1f /s  (%d thread%s; floor %.1f /s; %d rounds of %.0f s)  %s%s\n",
                "pooled executions per second", Median(pool_rates), threads, threads == 1 ? "" : "s",
                Median(floor_rates), static_cast<int>(ratios.size()), seconds, RatioOverRounds(ratios).c_str(),
                failed ? "  FAILED" : "");
    std::fflush(stdout);
  }
  return 0;
}
