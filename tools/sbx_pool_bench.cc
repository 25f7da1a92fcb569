// Benchmarks the warm pool beside the cold path in one run: fresh-session latency (cold
// SessionExecutor vs pooled), pooled executions per second, idle pooled session memory, and
// for reference bare python3 of the image and the floor of any pool here (kForkFloorScript).
//
//   build/sbx_pool_bench [--image DIR] [--iterations N] [--warm N] [--seconds S] [--prefault-mib M]
//                        [--refill-deferral-ms MS]
//
// --prefault-mib sets PoolOptions::prefault_budget_bytes (default the pool's 4 MiB; 0 turns the
// pre-fault off, 64 takes every page learned), to see what the pre-fault trades: first-execution
// latency for memory. --refill-deferral-ms sets PoolOptions::refill_deferral_seconds (default
// 500 ms; 0 refills while sessions execute), for its A/B.
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "sandbox/image/image.h"
#include "sandbox/launch/environment.h"
#include "src/executor/executors.h"
#include "src/executor/process_memory.h"
#include "src/executor/session_pool.h"

namespace {

using sbx::executor::CodeBlock;
using sbx::executor::PrivateMemoryBytes;
using Clock = std::chrono::steady_clock;

const char* const kCode = "import pandas as pd; pd.DataFrame({\"a\": range(1000)}).describe()";

// The floor of any pool on this machine, without sbx: the image's Python with the zygote's
// imports and warm-up forks children itself. A child forked ahead and told to go answers the
// describe (and its repr, as the driver returns it) after its copy-on-write faults; a
// fork + describe + exit loop bounds the rate on one and two cores.
const char* const kForkFloorScript = R"py(
import os, time, statistics
import pandas as pd, numpy, matplotlib, scipy
CODE = 'pd.DataFrame({"a": range(1000)}).describe()'
repr(eval(CODE))

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

def forks_per_second(workers, seconds=3.0):
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

samples = sorted(answer_in_preforked_child() for _ in range(30))
print("%-44s median %8.2f ms   p90 %8.2f ms   (n=%d)" % ("floor: describe in a pre-forked child", samples[15], samples[27], len(samples)))
for workers in (1, 2):
    print("%-44s %8.1f /s  (%d process%s, no sandbox)" % ("floor: fork + describe + exit", forks_per_second(workers), workers, "" if workers == 1 else "es"))
)py";

// The image's python3 running `code`, only chrooted (uid 1000, the sandbox's environment): no
// namespaces, no limits. Returns its wait status, or -1 if it could not be started.
int RunImagePython(const std::string& image, const char* code, const std::vector<char*>& env) {
  const char* args[] = {"chroot", "--userspec=1000:1000", image.c_str(), "/usr/bin/python3", "-c", code, nullptr};
  pid_t pid;
  if (posix_spawnp(&pid, "chroot", nullptr, nullptr, const_cast<char**>(args), env.data()) != 0) return -1;
  int status = 0;
  return waitpid(pid, &status, 0) == pid ? status : -1;
}

double Ms(Clock::time_point since) {
  return std::chrono::duration<double, std::milli>(Clock::now() - since).count();
}

void Report(const char* what, std::vector<double> samples) {
  if (samples.empty()) {
    std::printf("%-44s no samples\n", what);
    return;
  }
  std::sort(samples.begin(), samples.end());
  auto at = [&](double q) { return samples[std::min(samples.size() - 1, static_cast<size_t>(q * samples.size()))]; };
  std::printf("%-44s median %8.2f ms   p90 %8.2f ms   (n=%zu)\n", what, at(0.5), at(0.9), samples.size());
}

bool Ok(const sbx::Result<sbx::executor::CodeResult>& result) {
  if (!result) {
    std::fprintf(stderr, "error: %s\n", result.error().ToString().c_str());
    return false;
  }
  if (result->exit_code != 0) {
    std::fprintf(stderr, "failed: %s\n", result->output.c_str());
    return false;
  }
  return true;
}


}  // namespace

int main(int argc, char** argv) {
  std::string image;
  int iterations = 30;
  size_t warm = 4;
  size_t prefault_budget = sbx::executor::kDefaultPrefaultBudgetBytes;
  double seconds = 5;
  double refill_deferral_seconds = sbx::executor::PoolOptions{}.refill_deferral_seconds;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--image") image = argv[i + 1];
    else if (flag == "--iterations") iterations = std::atoi(argv[i + 1]);
    else if (flag == "--warm") warm = static_cast<size_t>(std::atoi(argv[i + 1]));
    else if (flag == "--seconds") seconds = std::atof(argv[i + 1]);
    else if (flag == "--refill-deferral-ms") refill_deferral_seconds = std::atof(argv[i + 1]) / 1000;
    else if (flag == "--prefault-mib") prefault_budget = static_cast<size_t>(std::atof(argv[i + 1]) * (1 << 20));
  }
  const std::vector<CodeBlock> blocks = {{"python", kCode}};
  std::printf("code: %s\n\n", kCode);

  if (image.empty()) {
    auto found = sbx::FindDefaultImage();
    if (!found) {
      std::fprintf(stderr, "image: %s\n", found.error().ToString().c_str());
      return 1;
    }
    image = found->path;
  }
  // Bare python3 of the image (the host has no pandas), only chrooted: no namespaces, no limits.
  std::vector<double> bare;
  std::vector<std::string> env_storage = sbx::BuildSandboxEnvironment({});
  std::vector<char*> env;
  for (auto& entry : env_storage) env.push_back(entry.data());
  env.push_back(nullptr);
  for (int i = 0; i < std::max(5, iterations / 3); ++i) {
    auto start = Clock::now();
    if (RunImagePython(image, kCode, env) < 0) break;
    bare.push_back(Ms(start));
  }
  Report("bare python3 -c (chroot into the image)", bare);
  std::fflush(stdout);  // our lines first: the floor script writes to the same stdout
  if (int status = RunImagePython(image, kForkFloorScript, env); status != 0) {
    std::fprintf(stderr, "floor: the image's python3 failed (status 0x%x); no floor figures\n", status);
  }

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
    if (!Ok((*session)->Execute(blocks))) return 1;
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
    pool_options.refill_deferral_seconds = refill_deferral_seconds;
    pool.reset();
    auto pool_start = Clock::now();
    auto created = sbx::executor::SessionPool::Create(pool_options);
    if (!created) {
      std::fprintf(stderr, "pool: %s\n", created.error().ToString().c_str());
      return 1;
    }
    pool = std::move(*created);
    std::printf("\n[pool, %zu warm sessions, pre-fault budget %.1f MiB: %zu pages learned and pre-copied, refill "
                "deferral %.0f ms]\n",
                warm, prefault_budget / 1048576.0, pool->prefault_pages(), refill_deferral_seconds * 1000);
    std::printf("%-44s %8.2f ms\n", "pool start (zygote imports + warm-up)", Ms(pool_start));
    pool->WaitForWarm(warm, 30);
    std::vector<double> pooled, acquire_only, idle_memory;
    for (int i = 0; i < iterations; ++i) {
      pool->WaitForWarm(warm, 5);
      auto start = Clock::now();
      auto session = pool->Acquire();
      if (!session) {
        std::fprintf(stderr, "acquire: %s\n", session.error().ToString().c_str());
        return 1;
      }
      acquire_only.push_back(Ms(start));
      idle_memory.push_back(PrivateMemoryBytes((*session)->host_pid()) / 1048576.0);
      if (!Ok((*session)->Execute(blocks))) return 1;
      pooled.push_back(Ms(start));
    }
    Report("pooled: acquire only", acquire_only);
    Report("pooled: acquire + describe", pooled);
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
      if (!Ok(session->Execute(blocks))) return 1;
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

  // Throughput: fresh isolated session + describe + close, back to back, on 1 and 2 threads.
  for (int threads : {1, 2}) {
    std::atomic<long> done{0};
    std::atomic<bool> failed{false};
    auto start = Clock::now();
    auto deadline = start + std::chrono::duration<double>(seconds);
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) {
      workers.emplace_back([&] {
        while (Clock::now() < deadline && !failed) {
          auto session = (*pool_ptr)->Acquire();
          if (!session || !Ok((*session)->Execute(blocks))) {
            failed = true;
            return;
          }
          session->reset();
          ++done;
        }
      });
    }
    for (auto& worker : workers) worker.join();
    double elapsed = Ms(start) / 1000;
    std::printf("%-44s %8.1f /s  (%ld in %.1f s, %d thread%s)%s\n", "pooled executions per second",
                done / elapsed, done.load(), elapsed, threads, threads == 1 ? "" : "s",
                failed ? "  FAILED" : "");
  }
  return 0;
}
