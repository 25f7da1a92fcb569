// sbx_bench: times cold start-up of small commands bare, under bwrap and under sbx, side by side.
//
// Every round runs each configuration once, in a rotating order, so that noise falls on all of
// them alike; the "x bare" column is the median of per-round ratios to that round's bare run.
// Configurations are command prefixes (data, in kDefaultConfigs below or --config NAME=PREFIX).
#include <fcntl.h>
#include <linux/magic.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/unique_fd.h"

namespace sbx::bench {
namespace {

// A configuration is a command prefix; the workload's argv is appended to it. Placeholders:
// {sbx} the sbx binary, {floor} sbx_namespace_floor (next to this program), {image} the root
// directory, {ws} a scratch workspace (mode 0777).
// Quotes ('...' "...") group words. The lead adjusts these lines as sbx's flags settle.
struct ConfigSpec {
  std::string name;
  std::string prefix;
};
const ConfigSpec kDefaultConfigs[] = {
    {"bare", ""},
    {"bwrap",
     "bwrap --unshare-all --unshare-user --uid 1000 --gid 1000 --die-with-parent --new-session"
     " --ro-bind {image} / --proc /proc --dev /dev --tmpfs /tmp --bind {ws} /workspace"
     " --chdir /workspace --clearenv --setenv PATH /usr/local/bin:/usr/bin:/bin"
     " --setenv HOME /workspace --setenv MPLCONFIGDIR /workspace/.mplconfig --"},
    // The kernel floor: the same six namespaces, nothing else (the host's root, no limits).
    {"unshare", "unshare --user --map-user=1000 --map-group=1000 --mount --pid --fork --net --ipc"
     " --uts --"},
    // The same floor without util-linux's dynamic start (a static PIE, like sbx), and with it
    // the least that enforces sbx's default limits on cgroup v2 or v1 (sbx_namespace_floor.cc).
    {"floor", "{floor} --limits none --"},
    {"floor-limits", "{floor} --limits auto --"},
    // The same with sbx's default root, /proc, /dev, loopback, capabilities and seccomp filter
    // built the least way: what the kernel charges for the default policy's protections.
    {"floor-root", "{floor} --limits auto --root {image} --"},
    {"sbx", "{sbx} run --image {image} --"},
    {"sbx-rlimits", "{sbx} run --image {image} --allow-degraded cgroup --cgroup none --"},
};

struct WorkloadSpec {
  std::string name;
  std::string command;
  int default_rounds;
};
const WorkloadSpec kWorkloads[] = {
    {"true", "/bin/true", 30},
    {"pass", "python3 -c pass", 30},
    {"import", "python3 -c 'import numpy, pandas, matplotlib.pyplot'", 10},
};

constexpr int kWarmupRounds = 2;
// Children get this environment, not ours: a PATH shim (pyenv) would otherwise tax bare only.
constexpr char kChildPath[] = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
constexpr char kFallbackImage[] = "/var/tmp/sbxdev/root";

// How long a timed-out configuration has to clean up after SIGTERM before it gets SIGKILL.
constexpr int kStopGraceMs = 5000;

struct Options {
  int rounds = 0;  // 0: each workload's default
  std::string image;
  std::string sbx;
  std::string floor;  // sbx_namespace_floor, next to this program
  std::vector<std::string> only;
  std::vector<std::string> configs;  // empty: all
  std::vector<std::string> added;    // names given with --config
  std::vector<ConfigSpec> config_specs{std::begin(kDefaultConfigs), std::end(kDefaultConfigs)};
  bool markdown = false;
  int gap_ms = 0;
  int timeout_s = 120;
  bool fixed_addresses = false;
};

double NowMs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

std::vector<std::string> SplitList(const std::string& s, char sep = ',') {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t comma = s.find(sep, start);
    if (comma == std::string::npos) comma = s.size();
    if (comma > start) out.push_back(s.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

// Splits a command line into words: whitespace separates, quotes group, backslash escapes.
std::optional<std::vector<std::string>> SplitWords(const std::string& s) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  char quote = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (quote != 0) {
      if (c == quote) {
        quote = 0;
      } else if (c == '\\' && quote == '"' && i + 1 < s.size()) {
        word += s[++i];
      } else {
        word += c;
      }
    } else if (c == '\'' || c == '"') {
      quote = c;
      in_word = true;
    } else if (c == '\\' && i + 1 < s.size()) {
      word += s[++i];
      in_word = true;
    } else if (c == ' ' || c == '\t' || c == '\n') {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
    } else {
      word += c;
      in_word = true;
    }
  }
  if (quote != 0) return std::nullopt;
  if (in_word) words.push_back(std::move(word));
  return words;
}

std::string ReplaceAll(std::string s, const std::string& from, const std::string& to) {
  for (size_t pos = s.find(from); pos != std::string::npos; pos = s.find(from, pos + to.size())) {
    s.replace(pos, from.size(), to);
  }
  return s;
}

// Looks a bare name up in kChildPath, as the child's execvp would, but once and outside timing.
std::string ResolveOnHost(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  for (const std::string& dir : SplitList(kChildPath, ':')) {
    std::string path = dir + "/" + name;
    struct stat st;
    if (stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(path.c_str(), X_OK) == 0) {
      return path;
    }
  }
  return name;  // posix_spawn reports ENOENT, and the configuration shows as failed
}

std::string FirstLine(const std::string& text) {
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    if (line.find_first_not_of(" \t\r") != std::string::npos) {
      return line.size() > 160 ? line.substr(0, 157) + "..." : line;
    }
    start = end + 1;
  }
  return "";
}

std::string DescribeStatus(int status) {
  if (WIFEXITED(status)) return "exit " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return std::string("signal ") + strsignal(WTERMSIG(status));
  return "status " + std::to_string(status);
}

// A ready-to-spawn argv; the char* array points into args, so build it once and don't copy.
struct Command {
  std::vector<std::string> args;
  std::vector<char*> argv;
  void Seal() {
    argv.clear();
    for (std::string& arg : args) argv.push_back(arg.data());
    argv.push_back(nullptr);
  }
};

struct RunResult {
  bool ok = false;
  double ms = 0;
  std::string failure;      // set when !ok
  std::string stderr_line;  // first line the child wrote to stderr, if any
};

// Spawns commands with stdin/stdout on /dev/null and stderr into a memfd, and times them.
class Runner {
 public:
  Runner(const std::string& home, int timeout_s) : timeout_ms_(timeout_s * 1000) {
    devnull_.reset(open("/dev/null", O_RDWR | O_CLOEXEC));
    stderr_.reset(memfd_create("sbx_bench_stderr", MFD_CLOEXEC));
    env_ = {std::string("PATH=") + kChildPath, "HOME=" + home, "LANG=C.UTF-8"};
    for (std::string& entry : env_) envp_.push_back(entry.data());
    envp_.push_back(nullptr);
  }
  bool ok() const { return devnull_.valid() && stderr_.valid(); }

  // Runs cmd to completion (or kills it after the timeout). out_fd replaces stdout when >= 0.
  RunResult Run(const Command& cmd, int out_fd = -1) {
    RunResult result;
    if (ftruncate(stderr_.get(), 0) != 0 || lseek(stderr_.get(), 0, SEEK_SET) != 0) {
      result.failure = std::string("memfd reset: ") + strerror(errno);
      return result;
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, devnull_.get(), 0);
    posix_spawn_file_actions_adddup2(&actions, out_fd >= 0 ? out_fd : devnull_.get(), 1);
    posix_spawn_file_actions_adddup2(&actions, stderr_.get(), 2);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    sigset_t none;
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setpgroup(&attr, 0);  // its own group, so a timeout can kill all of it
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETPGROUP);

    pid_t pid = -1;
    double start = NowMs();
    int rc = posix_spawn(&pid, cmd.argv[0], &actions, &attr, cmd.argv.data(), envp_.data());
    int status = 0;
    bool timed_out = false;
    if (rc == 0) {
      UniqueFd pidfd(static_cast<int>(syscall(SYS_pidfd_open, pid, 0)));
      if (pidfd.valid()) {
        pollfd pfd{pidfd.get(), POLLIN, 0};
        int n;
        do {
          n = poll(&pfd, 1, timeout_ms_);
        } while (n < 0 && errno == EINTR);
        if (n == 0) {
          timed_out = true;
          // SIGTERM first: sbx and the floor then kill their tree and remove their cgroups,
          // which SIGKILL would leave behind.
          kill(-pid, SIGTERM);
          do {
            n = poll(&pfd, 1, kStopGraceMs);
          } while (n < 0 && errno == EINTR);
          if (n == 0) {
            kill(-pid, SIGKILL);
            kill(pid, SIGKILL);
          }
        }
      }
      while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
    }
    double end = NowMs();
    posix_spawnattr_destroy(&attr);
    posix_spawn_file_actions_destroy(&actions);

    char buf[4096];
    ssize_t n = pread(stderr_.get(), buf, sizeof(buf), 0);
    result.stderr_line = FirstLine(std::string(buf, n > 0 ? static_cast<size_t>(n) : 0));
    if (rc != 0) {
      result.failure = std::string("spawn ") + cmd.argv[0] + ": " + strerror(rc);
    } else if (timed_out) {
      result.failure = "timed out after " + std::to_string(timeout_ms_ / 1000) + " s";
    } else if (status != 0) {
      result.failure = DescribeStatus(status);
      if (!result.stderr_line.empty()) result.failure += ": " + result.stderr_line;
    } else {
      result.ok = true;
      result.ms = end - start;
    }
    return result;
  }

  // Runs argv and returns its stdout, or nullopt if it failed.
  std::optional<std::string> Capture(const std::vector<std::string>& args) {
    Command cmd{args, {}};
    cmd.args[0] = ResolveOnHost(cmd.args[0]);
    cmd.Seal();
    UniqueFd out(memfd_create("sbx_bench_stdout", MFD_CLOEXEC));
    if (!out.valid() || !Run(cmd, out.get()).ok) return std::nullopt;
    std::string text;
    char buf[4096];
    ssize_t n;
    for (off_t off = 0; (n = pread(out.get(), buf, sizeof(buf), off)) > 0; off += n) {
      text.append(buf, static_cast<size_t>(n));
    }
    return text;
  }

 private:
  int timeout_ms_;
  UniqueFd devnull_;
  UniqueFd stderr_;
  std::vector<std::string> env_;
  std::vector<char*> envp_;
};

std::string Trim(const std::string& s) {
  size_t begin = s.find_first_not_of(" \t\r\n");
  if (begin == std::string::npos) return "";
  return s.substr(begin, s.find_last_not_of(" \t\r\n") - begin + 1);
}

double Median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  size_t mid = v.size() / 2;
  return v.size() % 2 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
}

// Nearest-rank percentile.
double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  size_t rank = static_cast<size_t>(std::ceil(p / 100 * v.size()));
  return v[std::clamp<size_t>(rank, 1, v.size()) - 1];
}

std::string CgroupMode() {
  struct statfs fs;
  if (statfs("/sys/fs/cgroup", &fs) != 0) return "none mounted";
  if (fs.f_type == CGROUP2_SUPER_MAGIC) return "v2 (unified)";
  if (statfs("/sys/fs/cgroup/unified", &fs) == 0 && fs.f_type == CGROUP2_SUPER_MAGIC) {
    return "hybrid (v1 controllers, v2 at /sys/fs/cgroup/unified)";
  }
  return "v1";
}

// The first value under a key that mentions "cgroup", anywhere in sbx doctor's JSON.
std::optional<std::string> FindCgroupFact(const nlohmann::json& j) {
  if (!j.is_object() && !j.is_array()) return std::nullopt;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (j.is_object() && it.key().find("cgroup") != std::string::npos) return it.value().dump();
    if (auto found = FindCgroupFact(*it)) return found;
  }
  return std::nullopt;
}

std::vector<std::string> HostFacts(Runner& runner, const Options& opt,
                                   const std::string& image_how) {
  std::vector<std::string> facts;
  char date[64];
  time_t now = time(nullptr);
  strftime(date, sizeof(date), "%Y-%m-%d %H:%M UTC", gmtime(&now));
  facts.push_back(std::string("date: ") + date);
  utsname u;
  if (uname(&u) == 0) facts.push_back(std::string("kernel: ") + u.release + " " + u.machine);
  cpu_set_t set;
  int usable = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : -1;
  std::string model;
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; model.empty() && std::getline(cpuinfo, line);) {
    if (line.rfind("model name", 0) == 0) model = Trim(line.substr(line.find(':') + 1));
  }
  facts.push_back("cpus: " + std::to_string(sysconf(_SC_NPROCESSORS_ONLN)) + " online, " +
                  std::to_string(usable) + " usable" + (model.empty() ? "" : ", " + model));
  facts.push_back("cgroup mount: " + CgroupMode());
  if (auto doctor = runner.Capture({opt.sbx, "doctor", "--json"})) {
    auto j = nlohmann::json::parse(*doctor, nullptr, /*allow_exceptions=*/false);
    if (auto fact = FindCgroupFact(j)) {
      facts.push_back("sbx doctor cgroup: " + fact->substr(0, 120));
    }
  }
  facts.push_back("image: " + opt.image + " (" + image_how + ")");
  facts.push_back("sbx: " + opt.sbx);
  facts.push_back("warm-up rounds: " + std::to_string(kWarmupRounds) +
                  ", gap between runs: " + std::to_string(opt.gap_ms) + " ms");
  if (opt.fixed_addresses)
    facts.push_back("address space randomisation: off for every launcher and for the programs of all "
                    "but sbx's configurations, whose program sbx starts randomised (--fixed-addresses)");
  return facts;
}

struct Row {
  std::string workload, config, failure;
  double median_ms = NAN, p90_ms = NAN, ratio = NAN, over_ms = NAN;
};

std::string Fixed(double v, int digits) {
  if (std::isnan(v)) return "-";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.*f", digits, v);
  return buf;
}

// Runs one workload across the configurations and returns one row per configuration.
std::vector<Row> BenchWorkload(Runner& runner, const Options& opt, const WorkloadSpec& workload,
                               const std::vector<ConfigSpec>& configs, const std::string& ws,
                               std::vector<std::string>& notes) {
  const int rounds = opt.rounds > 0 ? opt.rounds : workload.default_rounds;
  const size_t n = configs.size();
  std::vector<Command> commands(n);
  std::vector<std::string> failures(n);
  std::vector<std::vector<double>> times(n, std::vector<double>(rounds, NAN));
  std::vector<bool> noted(n, false);
  for (size_t c = 0; c < n; ++c) {
    auto prefix = SplitWords(configs[c].prefix);
    auto words = SplitWords(workload.command);
    if (!prefix || !words) {
      failures[c] = "unbalanced quotes in the command line";
      continue;
    }
    const std::pair<const char*, const std::string*> placeholders[] = {
        {"{sbx}", &opt.sbx}, {"{floor}", &opt.floor}, {"{image}", &opt.image}, {"{ws}", &ws}};
    for (std::string& w : *prefix) {
      for (const auto& [placeholder, value] : placeholders) w = ReplaceAll(w, placeholder, *value);
      commands[c].args.push_back(w);
    }
    for (std::string& w : *words) commands[c].args.push_back(w);
    commands[c].args[0] = ResolveOnHost(commands[c].args[0]);
    commands[c].Seal();
  }

  const bool progress = isatty(STDERR_FILENO);
  for (int r = -kWarmupRounds; r < rounds; ++r) {
    if (progress) {
      std::fprintf(stderr, "\r%-8s %s %d/%d ", workload.name.c_str(), r < 0 ? "warm-up" : "round",
                   r < 0 ? r + kWarmupRounds + 1 : r + 1, r < 0 ? kWarmupRounds : rounds);
    }
    for (size_t k = 0; k < n; ++k) {
      size_t c = (k + static_cast<size_t>(r + kWarmupRounds)) % n;  // rotate who goes first
      if (!failures[c].empty()) continue;
      RunResult res = runner.Run(commands[c]);
      if (!res.ok) {
        failures[c] = res.failure;
      } else if (r >= 0) {
        times[c][r] = res.ms;
      }
      if (res.ok && !res.stderr_line.empty() && !noted[c]) {
        noted[c] = true;
        notes.push_back(workload.name + "/" + configs[c].name +
                        " wrote to stderr: " + res.stderr_line);
      }
      if (opt.gap_ms > 0) usleep(static_cast<useconds_t>(opt.gap_ms) * 1000);
    }
  }
  if (progress) std::fprintf(stderr, "\r%40s\r", "");

  size_t bare = n;
  for (size_t c = 0; c < n; ++c) {
    if (configs[c].name == "bare" && failures[c].empty()) bare = c;
  }
  std::vector<Row> rows;
  for (size_t c = 0; c < n; ++c) {
    Row row{workload.name, configs[c].name, failures[c]};
    if (failures[c].empty()) {
      row.median_ms = Median(times[c]);
      row.p90_ms = Percentile(times[c], 90);
      if (bare < n) {
        std::vector<double> ratios, diffs;
        for (int r = 0; r < rounds; ++r) {
          ratios.push_back(times[c][r] / times[bare][r]);
          diffs.push_back(times[c][r] - times[bare][r]);
        }
        row.ratio = Median(ratios);
        row.over_ms = Median(diffs);
      }
    }
    rows.push_back(row);
  }
  return rows;
}

void PrintTable(const std::vector<Row>& rows, bool markdown) {
  if (markdown) {
    std::printf("| workload | config | median ms | p90 ms | x bare | +ms over bare |\n");
    std::printf("|---|---|---:|---:|---:|---:|\n");
    for (const Row& row : rows) {
      if (!row.failure.empty()) {
        std::printf("| %s | %s | failed: %s | | | |\n", row.workload.c_str(), row.config.c_str(),
                    ReplaceAll(row.failure, "|", "\\|").c_str());
        continue;
      }
      std::printf("| %s | %s | %s | %s | %s | %s |\n", row.workload.c_str(), row.config.c_str(),
                  Fixed(row.median_ms, 2).c_str(), Fixed(row.p90_ms, 2).c_str(),
                  Fixed(row.ratio, 2).c_str(), Fixed(row.over_ms, 2).c_str());
    }
    return;
  }
  std::printf("%-8s %-14s %10s %10s %8s %14s\n", "workload", "config", "median ms", "p90 ms",
              "x bare", "+ms over bare");
  for (const Row& row : rows) {
    if (!row.failure.empty()) {
      std::printf("%-8s %-14s failed: %s\n", row.workload.c_str(), row.config.c_str(),
                  row.failure.c_str());
      continue;
    }
    std::printf("%-8s %-14s %10s %10s %8s %14s\n", row.workload.c_str(), row.config.c_str(),
                Fixed(row.median_ms, 2).c_str(), Fixed(row.p90_ms, 2).c_str(),
                Fixed(row.ratio, 2).c_str(), Fixed(row.over_ms, 2).c_str());
  }
}

constexpr char kUsage[] =
    "usage: sbx_bench [--rounds N] [--image DIR] [--sbx PATH] [--only WORKLOAD[,...]]\n"
    "                 [--configs NAME[,...]] [--config NAME=COMMAND_PREFIX] [--markdown]\n"
    "                 [--gap-ms MS] [--timeout-s S] [--fixed-addresses]\n"
    "workloads: true, pass, import. --config adds or replaces a configuration; in its prefix\n"
    "{sbx}, {floor}, {image} and {ws} are replaced, and quotes group words.\n"
    "--gap-ms sleeps between runs: >=30 exposes per-start cgroup-migration (RCU) costs that\n"
    "back-to-back starts hide.\n"
    "--fixed-addresses runs every configuration without address space randomisation. Only for\n"
    "an emulator (the cgroup v2 VM under TCG): it translates a program's code again at each new\n"
    "address, a cost that grows with the code a launcher runs and that no CPU has. sbx itself\n"
    "runs so, but clears the flag for the program it starts, as it does for any caller's.\n";

bool ParseInt(const char* s, int min, int* out) {
  char* end = nullptr;
  errno = 0;
  long v = std::strtol(s, &end, 10);
  if (errno != 0 || end == s || *end != '\0' || v < min || v > 1000000) return false;
  *out = static_cast<int>(v);
  return true;
}

std::optional<Options> ParseArgs(int argc, char** argv) {
  Options opt;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--markdown") {
      opt.markdown = true;
      continue;
    }
    if (arg == "--fixed-addresses") {
      opt.fixed_addresses = true;
      continue;
    }
    if (arg == "--help" || arg == "-h" || i + 1 >= argc) return std::nullopt;
    const char* value = argv[++i];
    if (arg == "--rounds") {
      if (!ParseInt(value, 1, &opt.rounds)) return std::nullopt;
    } else if (arg == "--gap-ms") {
      if (!ParseInt(value, 0, &opt.gap_ms)) return std::nullopt;
    } else if (arg == "--timeout-s") {
      if (!ParseInt(value, 1, &opt.timeout_s)) return std::nullopt;
    } else if (arg == "--image") {
      opt.image = value;
    } else if (arg == "--sbx") {
      opt.sbx = value;
    } else if (arg == "--only") {
      for (const std::string& w : SplitList(value)) opt.only.push_back(w);
    } else if (arg == "--configs") {
      for (const std::string& c : SplitList(value)) opt.configs.push_back(c);
    } else if (arg == "--config") {
      std::string spec = value;
      size_t eq = spec.find('=');
      if (eq == std::string::npos || eq == 0) return std::nullopt;
      ConfigSpec config{spec.substr(0, eq), spec.substr(eq + 1)};
      opt.added.push_back(config.name);
      auto same = [&](const ConfigSpec& c) { return c.name == config.name; };
      auto it = std::find_if(opt.config_specs.begin(), opt.config_specs.end(), same);
      if (it != opt.config_specs.end()) {
        *it = config;
      } else {
        opt.config_specs.push_back(config);
      }
    } else {
      return std::nullopt;
    }
  }
  return opt;
}

int Main(int argc, char** argv) {
  std::optional<Options> parsed = ParseArgs(argc, argv);
  if (!parsed) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  Options opt = std::move(*parsed);
  // Inherited by every program started from here on, and by everything they start.
  if (opt.fixed_addresses) {
    const int current = ::personality(0xffffffff);
    if (current < 0 || ::personality(static_cast<unsigned long>(current) | ADDR_NO_RANDOMIZE) < 0) {
      std::fprintf(stderr, "sbx_bench: personality(ADDR_NO_RANDOMIZE): %s\n", std::strerror(errno));
      return 2;
    }
  }

  std::vector<ConfigSpec> configs;
  for (const ConfigSpec& c : opt.config_specs) {
    if (opt.configs.empty() ||
        std::find(opt.configs.begin(), opt.configs.end(), c.name) != opt.configs.end()) {
      configs.push_back(c);
    }
  }
  for (const std::string& name : opt.added) {
    if (!opt.configs.empty() && std::find(opt.configs.begin(), opt.configs.end(), name) == opt.configs.end()) {
      std::fprintf(stderr, "sbx_bench: warning: --config %s is not run: --configs does not list it\n",
                   name.c_str());
    }
  }
  for (const std::string& name : opt.configs) {
    auto same = [&](const ConfigSpec& c) { return c.name == name; };
    if (std::none_of(configs.begin(), configs.end(), same)) {
      std::fprintf(stderr, "sbx_bench: unknown configuration %s\n", name.c_str());
      return 2;
    }
  }
  std::vector<WorkloadSpec> workloads;
  for (const WorkloadSpec& w : kWorkloads) {
    if (opt.only.empty() || std::find(opt.only.begin(), opt.only.end(), w.name) != opt.only.end()) {
      workloads.push_back(w);
    }
  }
  if (workloads.empty() || configs.empty()) {
    std::fputs(kUsage, stderr);
    return 2;
  }

  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  const std::filesystem::path here = ec ? std::filesystem::path(".") : self.parent_path();
  if (opt.sbx.empty()) opt.sbx = ec ? "sbx" : (here / "sbx").string();
  opt.floor = (here / "sbx_namespace_floor").string();

  char ws_template[] = "/tmp/sbx_bench.XXXXXX";
  if (mkdtemp(ws_template) == nullptr || chmod(ws_template, 0777) != 0) {
    std::fprintf(stderr, "sbx_bench: mkdtemp(/tmp/sbx_bench.XXXXXX): %s\n", strerror(errno));
    return 1;
  }
  const std::string ws = ws_template;
  Runner runner(ws, opt.timeout_s);
  if (!runner.ok()) {
    std::fprintf(stderr, "sbx_bench: open /dev/null or memfd_create: %s\n", strerror(errno));
    std::filesystem::remove_all(ws, ec);
    return 1;
  }

  std::string image_how = "--image";
  if (opt.image.empty()) {
    std::optional<std::string> path = runner.Capture({opt.sbx, "image", "path"});
    if (path && std::filesystem::is_directory(Trim(*path), ec)) {
      opt.image = Trim(*path);
      image_how = "from `sbx image path`";
    } else {
      opt.image = kFallbackImage;
      image_how = "default; `sbx image path` gave none";
    }
  }

  const std::vector<std::string> facts = HostFacts(runner, opt, image_how);
  for (const std::string& fact : facts) std::printf(opt.markdown ? "- %s\n" : "%s\n", fact.c_str());
  std::printf("\n");
  std::fflush(stdout);

  std::vector<Row> rows;
  std::vector<std::string> notes;
  for (const WorkloadSpec& w : workloads) {
    for (Row& row : BenchWorkload(runner, opt, w, configs, ws, notes)) rows.push_back(row);
  }
  PrintTable(rows, opt.markdown);
  for (const std::string& note : notes) std::printf("\nnote: %s", note.c_str());
  if (!notes.empty()) std::printf("\n");
  std::filesystem::remove_all(ws, ec);
  return 0;
}

}  // namespace
}  // namespace sbx::bench

int main(int argc, char** argv) { return sbx::bench::Main(argc, argv); }
