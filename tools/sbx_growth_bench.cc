// How sbx's costs grow with the work, each beside its floor (the same work without sbx) measured
// in the same run:
//
//   idle sessions (--sessions 10,100,1000): N pooled sessions acquired and left idle. Time to
//     create them (from two threads), the memory they hold (the host's MemAvailable drop, and
//     the sum of their private memory), and the time to close them all, until every session's
//     process tree, cgroup and workspace is gone. Floor: the image's Python with the stack
//     imported forks N children that wait, and reaps them.
//   executions (--open 1,10,100): M sessions held open; one client runs `x = 1` in them round
//     robin. Executions per second. Floor: M children of the image's Python, forked ahead,
//     answering the same code over pipes.
//   output (--output-bytes 1024,1048576,...): a one-shot sandbox (a cold session) writes B bytes
//     of text to stdout (`yes | head -c B` in bash), captured and capped at the policy's
//     output_bytes (head and tail kept). Wall time against the same command bare, with this
//     process reading all of it.
//   shell cells (--sleep-ms 10,30,100): one open session runs bash cells of `sleep S`, so the
//     command's length grows. Wall time against the same command bare (bash spawned and
//     waited for): what a shell cell adds to a command of each length.
//
//   build/sbx_growth_bench [--image DIR] [--sessions LIST] [--open LIST] [--output-bytes LIST]
//                          [--sleep-ms LIST] [--seconds S] [--rounds N]
//                          [--only sessions,executions,output,shell]
//
// Start-up against image size has its own script: tools/growth/image_size.sh.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "src/executor/executors.h"
#include "src/executor/process_memory.h"
#include "src/executor/session_pool.h"
#include "tools/bench_support.h"

namespace {

using sbx::executor::CodeBlock;
using sbx::executor::PooledSessionExecutor;
using Clock = std::chrono::steady_clock;

double Ms(Clock::time_point since) { return std::chrono::duration<double, std::milli>(Clock::now() - since).count(); }

double MiB(double bytes) { return bytes / 1048576.0; }

// MemAvailable of /proc/meminfo, in bytes.
double MemAvailable() {
  std::ifstream meminfo("/proc/meminfo");
  for (std::string line; std::getline(meminfo, line);) {
    unsigned long long kib = 0;
    if (std::sscanf(line.c_str(), "MemAvailable: %llu kB", &kib) == 1) return static_cast<double>(kib) * 1024;
  }
  return 0;
}

std::vector<long> ParseList(const std::string& text) {
  std::vector<long> values;
  std::istringstream items(text);
  for (std::string item; std::getline(items, item, ',');) {
    long value = std::atol(item.c_str());
    if (value > 0) values.push_back(value);
  }
  return values;
}

// The image's python3 running `script` (SpawnImagePython): the floor of each section. Its stdin and stdout are pipes: the script prints its figures as
// "name value" lines and may wait for a line on stdin (Say) between its phases.
class FloorPython {
 public:
  FloorPython(const std::string& image, const std::string& script) {
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) return;
    pid_ = sbx::bench::SpawnImagePython(image, script, in[0], out[1]);
    close(in[0]);
    close(out[1]);
    to_ = fdopen(in[1], "w");
    from_ = fdopen(out[0], "r");
  }
  ~FloorPython() {
    if (to_ != nullptr) fclose(to_);
    if (from_ != nullptr) fclose(from_);
    if (pid_ > 0) waitpid(pid_, nullptr, 0);
  }
  // The value of the next "name value" line, skipping others; nullopt at its end.
  std::optional<double> Read(const std::string& name) {
    char line[512];
    while (from_ != nullptr && fgets(line, sizeof line, from_) != nullptr) {
      char key[128];
      double value = 0;
      if (std::sscanf(line, "%127s %lf", key, &value) == 2 && name == key) return value;
    }
    std::fprintf(stderr, "floor: no \"%s\" from the image's python3\n", name.c_str());
    return std::nullopt;
  }
  void Say(const char* line) {
    if (to_ == nullptr) return;
    std::fputs(line, to_);
    std::fflush(to_);
  }

 private:
  pid_t pid_ = -1;
  FILE* to_ = nullptr;
  FILE* from_ = nullptr;
};

const char* const kImports = "import os, sys, time\nimport numpy, pandas, matplotlib, scipy\n";

// N idle children of a Python with the stack imported: the floor of N idle sessions.
const char* const kIdleFloorScript = R"py(
def say(name, value): print(name, value, flush=True)
N = int(os.environ["SBX_GROWTH_N"])
say("imported", 1)
sys.stdin.readline()  # the host has read MemAvailable
r, w = os.pipe()
start = time.perf_counter()
children = []
for _ in range(N):
    pid = os.fork()
    if pid == 0:
        os.close(w); os.read(r, 1); os._exit(0)
    children.append(pid)
say("created_ms", (time.perf_counter() - start) * 1000)
sys.stdin.readline()  # the host has read its memory figures
start = time.perf_counter()
os.close(w)
for pid in children: os.waitpid(pid, 0)
say("closed_ms", (time.perf_counter() - start) * 1000)
)py";

// M children forked ahead, each running the code it is sent: the floor of M open sessions.
const char* const kExecutionsFloorScript = R"py(
M = int(os.environ["SBX_GROWTH_M"]); SECONDS = float(os.environ["SBX_GROWTH_SECONDS"])
channels = []
for _ in range(M):
    to_r, to_w = os.pipe(); back_r, back_w = os.pipe()
    if os.fork() == 0:
        for fd in [to_w, back_r] + [fd for pair in channels for fd in pair]: os.close(fd)
        while True:
            code = os.read(to_r, 4096)
            if not code: os._exit(0)
            exec(compile(code, "<cell>", "exec"), {}); os.write(back_w, b"k")
    channels.append((to_w, back_r))
done, deadline = 0, time.perf_counter() + SECONDS
while time.perf_counter() < deadline:
    to_w, back_r = channels[done % M]
    os.write(to_w, b"x = 1\n"); os.read(back_r, 1); done += 1
print("per_second", done / SECONDS, flush=True)
for to_w, _ in channels: os.close(to_w)
for _ in range(M): os.wait()
)py";

// `script` after the stack's imports, with each (name, value) set in its os.environ first.
std::string ScriptWith(const std::vector<std::pair<std::string, std::string>>& settings, const char* script) {
  std::string text = "import os\n";
  for (const auto& [name, value] : settings) text += "os.environ['" + name + "'] = '" + value + "'\n";
  return text + kImports + script;
}

std::unique_ptr<sbx::executor::SessionPool> NewPool(const std::string& image, long sessions) {
  sbx::executor::PoolOptions options;
  options.image_dir = image;
  options.warm_sessions = 0;  // every Acquire forks: the cost of a session, not of a pool
  options.max_sessions = static_cast<size_t>(sessions);
  auto pool = sbx::executor::SessionPool::Create(options);
  if (!pool) {
    std::fprintf(stderr, "pool: %s\n", pool.error().ToString().c_str());
    return nullptr;
  }
  return std::move(*pool);
}

// N sessions acquired from two threads; nullopt if any failed.
std::optional<std::vector<std::unique_ptr<PooledSessionExecutor>>> AcquireSessions(sbx::executor::SessionPool& pool,
                                                                                   long count) {
  std::vector<std::unique_ptr<PooledSessionExecutor>> sessions;
  std::mutex mutex;
  std::atomic<long> next{0};
  std::atomic<bool> failed{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&] {
      while (!failed && next++ < count) {
        auto session = pool.Acquire();
        if (!session) {
          std::fprintf(stderr, "acquire: %s\n", session.error().ToString().c_str());
          failed = true;
          return;
        }
        std::lock_guard<std::mutex> lock(mutex);
        sessions.push_back(std::move(*session));
      }
    });
  }
  for (auto& thread : threads) thread.join();
  if (failed) return std::nullopt;
  return sessions;
}

void IdleSessions(const std::string& image, const std::vector<long>& counts) {
  std::printf("\n[idle sessions: created from 2 threads, left idle, then all closed]\n");
  std::printf("%-8s %-6s %12s %12s %14s %14s %12s %12s\n", "sessions", "who", "create ms", "ms each",
              "MemAvail drop", "MiB each", "close ms", "ms each");
  for (long count : counts) {
    {
      FloorPython floor(image, ScriptWith({{"SBX_GROWTH_N", std::to_string(count)}}, kIdleFloorScript));
      if (!floor.Read("imported")) return;
      const double before = MemAvailable();
      floor.Say("\n");
      auto created = floor.Read("created_ms");
      const double drop = before - MemAvailable();
      floor.Say("\n");
      auto closed = floor.Read("closed_ms");
      if (created && closed) {
        std::printf("%-8ld %-6s %12.1f %12.2f %10.1f MiB %14.2f %12.1f %12.2f\n", count, "floor", *created,
                    *created / count, MiB(drop), MiB(drop) / count, *closed, *closed / count);
      }
    }
    auto pool = NewPool(image, count);
    if (!pool) return;
    const double before = MemAvailable();
    auto start = Clock::now();
    auto sessions = AcquireSessions(*pool, count);
    if (!sessions) return;
    const double create_ms = Ms(start);
    const double drop = before - MemAvailable();
    double private_bytes = 0;
    for (auto& session : *sessions) private_bytes += sbx::executor::PrivateMemoryBytes(session->host_pid());
    start = Clock::now();
    sessions->clear();
    if (!pool->WaitForRetired(600)) std::fprintf(stderr, "sessions: not all gone after 600 s\n");
    const double close_ms = Ms(start);
    std::printf("%-8ld %-6s %12.1f %12.2f %10.1f MiB %14.2f %12.1f %12.2f   (private: %.2f MiB each)\n", count,
                "sbx", create_ms, create_ms / count, MiB(drop), MiB(drop) / count, close_ms, close_ms / count,
                MiB(private_bytes) / count);
    std::fflush(stdout);
  }
}

void Executions(const std::string& image, const std::vector<long>& counts, double seconds) {
  std::printf("\n[executions of `x = 1`, one client, round robin over the open sessions, %.0f s]\n", seconds);
  std::printf("%-8s %14s %14s %8s\n", "open", "floor /s", "sbx /s", "x floor");
  const std::vector<CodeBlock> cell = {{"python", "x = 1"}};
  for (long count : counts) {
    double floor_rate = 0;
    {
      FloorPython floor(image, ScriptWith({{"SBX_GROWTH_M", std::to_string(count)},
                                           {"SBX_GROWTH_SECONDS", std::to_string(seconds)}},
                                          kExecutionsFloorScript));
      floor_rate = floor.Read("per_second").value_or(0);
    }
    auto pool = NewPool(image, count);
    if (!pool) return;
    auto sessions = AcquireSessions(*pool, count);
    if (!sessions) return;
    for (auto& session : *sessions) {
      if (!sbx::bench::ExecutionOk(session->Execute(cell))) return;  // each session's first execution, out of the count
    }
    long done = 0;
    const auto deadline = Clock::now() + std::chrono::duration<double>(seconds);
    while (Clock::now() < deadline) {
      if (!sbx::bench::ExecutionOk((*sessions)[static_cast<size_t>(done % count)]->Execute(cell))) return;
      ++done;
    }
    const double rate = done / seconds;
    std::printf("%-8ld %14.1f %14.1f %7.2fx\n", count, floor_rate, rate, floor_rate > 0 ? rate / floor_rate : 0.0);
    std::fflush(stdout);
  }
}

// Text output of `bytes` bytes ("y" lines), as a shell writes it.
std::string OutputCommand(long bytes) { return "yes | head -c " + std::to_string(bytes); }

// Bare: `command` in bash, its stdout into a pipe this process drains. Returns wall ms.
double BareBash(const std::string& command) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return -1;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  const char* args[] = {"bash", "-c", command.c_str(), nullptr};
  auto start = Clock::now();
  pid_t pid;
  int spawned = posix_spawnp(&pid, "bash", &actions, nullptr, const_cast<char**>(args), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  static char buffer[1 << 16];
  while (spawned == 0 && read(fds[0], buffer, sizeof buffer) > 0) {
  }
  close(fds[0]);
  if (spawned == 0) waitpid(pid, nullptr, 0);
  return Ms(start);
}

double Median(std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  return samples.empty() ? 0 : samples[samples.size() / 2];
}

struct BareAndSbx {
  double bare_ms = 0;
  double sbx_ms = 0;
};

// Medians of `rounds` alternated runs of `command`: in bash bare, then through sbx by `execute`,
// which reports its own failure and returns false to stop.
std::optional<BareAndSbx> MediansAgainstBare(const std::string& command, int rounds,
                                              const std::function<bool()>& execute) {
  std::vector<double> bare, sandboxed;
  for (int round = 0; round < rounds; ++round) {
    bare.push_back(BareBash(command));
    auto start = Clock::now();
    if (!execute()) return std::nullopt;
    sandboxed.push_back(Ms(start));
  }
  return BareAndSbx{Median(bare), Median(sandboxed)};
}

void Output(const std::string& image, const std::vector<long>& sizes, int rounds) {
  sbx::executor::ExecutorOptions options;
  options.image_dir = image;
  sbx::Policy policy;
  policy.limits.timeout_seconds = 600;
  auto valid = sbx::ValidPolicy::Check(policy);
  if (!valid) {
    std::fprintf(stderr, "output: %s\n", valid.error().ToString().c_str());
    return;
  }
  options.policy = *valid;
  std::printf("\n[output: one-shot sandbox, `yes | head -c B` captured (kept: %.1f MiB per stream, head and "
              "tail), medians of %d]\n",
              MiB(static_cast<double>(options.policy->limits.output_bytes)), rounds);
  std::printf("%-14s %12s %12s %12s %11s\n", "bytes", "bare ms", "sbx ms", "+ms", "kept");
  auto executor = sbx::executor::SandboxExecutor::Create(options);
  if (!executor) {
    std::fprintf(stderr, "sandbox: %s\n", executor.error().ToString().c_str());
    return;
  }
  for (long bytes : sizes) {
    size_t kept = 0;
    auto medians = MediansAgainstBare(OutputCommand(bytes), rounds, [&] {
      auto result = (*executor)->Execute({{"bash", OutputCommand(bytes)}});
      if (!sbx::bench::ExecutionOk(result)) return false;
      kept = result->stdout_text.size();
      return true;
    });
    if (!medians) return;
    std::printf("%-14ld %12.2f %12.2f %12.2f %7.0f KiB\n", bytes, medians->bare_ms, medians->sbx_ms,
                medians->sbx_ms - medians->bare_ms, kept / 1024.0);
    std::fflush(stdout);
  }
}

// A command's length against the time a shell cell of it takes in an open session.
void ShellCells(const std::string& image, const std::vector<long>& sleeps_ms, int rounds) {
  sbx::executor::ExecutorOptions options;
  options.image_dir = image;
  auto session = sbx::executor::SessionExecutor::Create(options);
  if (!session) {
    std::fprintf(stderr, "shell: %s\n", session.error().ToString().c_str());
    return;
  }
  std::printf("\n[shell cells: bash `sleep S` in one open session, medians of %d]\n", rounds);
  std::printf("%-14s %12s %12s %12s\n", "sleep ms", "bare ms", "sbx ms", "+ms");
  for (long sleep_ms : sleeps_ms) {
    char command[64];
    std::snprintf(command, sizeof command, "sleep %.3f", sleep_ms / 1000.0);
    auto medians = MediansAgainstBare(
        command, rounds, [&] { return sbx::bench::ExecutionOk((*session)->Execute({{"bash", command}})); });
    if (!medians) return;
    std::printf("%-14ld %12.2f %12.2f %12.2f\n", sleep_ms, medians->bare_ms, medians->sbx_ms,
                medians->sbx_ms - medians->bare_ms);
    std::fflush(stdout);
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string image, only = "sessions,executions,output,shell";
  std::vector<long> sessions = {10, 100, 1000}, open = {1, 10, 100};
  std::vector<long> output = {1 << 10, 1 << 20, 64 << 20, 1 << 30}, sleeps_ms = {10, 30, 100};
  double seconds = 5;
  int rounds = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--image") image = value;
    else if (flag == "--sessions") sessions = ParseList(value);
    else if (flag == "--open") open = ParseList(value);
    else if (flag == "--output-bytes") output = ParseList(value);
    else if (flag == "--sleep-ms") sleeps_ms = ParseList(value);
    else if (flag == "--seconds") seconds = std::atof(value.c_str());
    else if (flag == "--rounds") rounds = std::max(1, std::atoi(value.c_str()));
    else if (flag == "--only") only = value;
    else {
      std::fprintf(stderr, "unknown flag %s; see the comment at the top of tools/sbx_growth_bench.cc\n", flag.c_str());
      return 2;
    }
  }
  image = sbx::bench::ImageOrDefault(image);
  if (image.empty()) return 1;
  std::printf("image: %s\n", image.c_str());
  if (only.find("sessions") != std::string::npos) IdleSessions(image, sessions);
  if (only.find("executions") != std::string::npos) Executions(image, open, seconds);
  if (only.find("output") != std::string::npos) Output(image, output, rounds);
  if (only.find("shell") != std::string::npos) ShellCells(image, sleeps_ms, rounds);
  return 0;
}
