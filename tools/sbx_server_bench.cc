// Benchmarks `sbx serve` against the in-process executor it fronts, in one run: the execute
// round trip of a small block (server vs in-process, alternating round by round) and
// executions per second over 1, 2 and 8 connections (server) vs as many threads (in-process),
// each connection or thread with its own session, alternating repeat by repeat.
//
//   build/sbx_server_bench [--rounds N] [--seconds S] [--repeats R] [--pool N] [--image DIR]
//                          [--sbx PATH] [--markdown]
//
// The server is the real `sbx serve` child on a temporary Unix socket; the bench talks to it
// with a minimal keep-alive HTTP/1.1 client of its own, so what is measured is the server (HTTP
// parsing, JSON both ways, its threads), not a client library. Both sides get the same default
// policy and image; --pool N gives both a warm pool of N (the server's --pool), 0 (the default)
// starts every session cold on both sides.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "base/error.h"
#include "base/unique_fd.h"
#include "src/executor/executors.h"
#include "src/executor/session_pool.h"

namespace sbx::bench {
namespace {

using Clock = std::chrono::steady_clock;
using executor::CodeBlock;
using executor::SessionExecutor;

const char* const kCode = "x = 1\nprint(x + 1)";
const char* const kExpectedOutput = "2\n";
constexpr int kWarmupRounds = 20;
const int kConnectionCounts[] = {1, 2, 8};

struct Options {
  int rounds = 200;
  double seconds = 3;
  int repeats = 3;
  int pool = 0;
  std::string image;
  std::string sbx;
  bool markdown = false;
};

double MsSince(Clock::time_point since) {
  return std::chrono::duration<double, std::milli>(Clock::now() - since).count();
}

double Quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * v.size()))];
}

// CPU time of a whole process (all its threads, live and ended), from /proc/PID/stat.
double ProcessCpuMs(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), {});
  size_t after_name = stat.rfind(')');
  if (after_name == std::string::npos) return 0;
  std::istringstream fields(stat.substr(after_name + 2));
  std::string field;
  unsigned long long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && fields >> field; ++i) {  // fields 14 and 15: utime, stime
    if (i == 14) utime = std::stoull(field);
    if (i == 15) stime = std::stoull(field);
  }
  return static_cast<double>(utime + stime) * 1000.0 / static_cast<double>(sysconf(_SC_CLK_TCK));
}

std::string LoadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string one, five, fifteen;
  in >> one >> five >> fifteen;
  return one + " " + five + " " + fifteen;
}

// One keep-alive HTTP/1.1 connection over AF_UNIX: a request is one send, a response is read
// up to its Content-Length (the server always sends one).
class UnixHttpClient {
 public:
  static Result<std::unique_ptr<UnixHttpClient>> Connect(const std::string& path) {
    UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!fd) return SysError(ErrorCode::kIo, "socket(AF_UNIX)");
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, path.c_str(), sizeof(address.sun_path) - 1);
    if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
      return SysError(ErrorCode::kIo, "connect(" + path + ")");
    }
    return std::unique_ptr<UnixHttpClient>(new UnixHttpClient(std::move(fd)));
  }

  // Sends `method target` with a JSON body; on success, the status and the body.
  Result<std::pair<int, std::string>> Request(const std::string& method, const std::string& target,
                                              const std::string& body) {
    std::string message = method + " " + target +
                          " HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                          "Content-Length: " +
                          std::to_string(body.size()) + "\r\n\r\n" + body;
    for (size_t sent = 0; sent < message.size();) {
      ssize_t n = ::send(fd_.get(), message.data() + sent, message.size() - sent, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return SysError(ErrorCode::kIo, "send");
      sent += static_cast<size_t>(n);
    }
    size_t head_end;
    while ((head_end = buffer_.find("\r\n\r\n")) == std::string::npos) SBX_TRY(Fill());
    const std::string head = buffer_.substr(0, head_end);
    int status = 0;
    if (std::sscanf(head.c_str(), "HTTP/1.1 %d", &status) != 1) {
      return MakeError(ErrorCode::kIo, "a response without a status line: " + head.substr(0, 80));
    }
    std::string lower = head;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    size_t field = lower.find("\r\ncontent-length:");
    if (field == std::string::npos)
      return MakeError(ErrorCode::kIo, "a response without Content-Length");
    const size_t length = std::strtoul(head.c_str() + field + 17, nullptr, 10);
    while (buffer_.size() < head_end + 4 + length) SBX_TRY(Fill());
    std::string response_body = buffer_.substr(head_end + 4, length);
    buffer_.erase(0, head_end + 4 + length);
    return std::make_pair(status, std::move(response_body));
  }

 private:
  explicit UnixHttpClient(UniqueFd fd) : fd_(std::move(fd)) {}
  Result<void> Fill() {
    char chunk[16384];
    ssize_t n;
    do {
      n = ::recv(fd_.get(), chunk, sizeof(chunk), 0);
    } while (n < 0 && errno == EINTR);
    if (n < 0) return SysError(ErrorCode::kIo, "recv");
    if (n == 0) return MakeError(ErrorCode::kIo, "the server closed the connection");
    buffer_.append(chunk, static_cast<size_t>(n));
    return {};
  }

  UniqueFd fd_;
  std::string buffer_;
};

// The `sbx serve` child on a socket in a temporary directory; SIGTERM (a drain) at the end.
class ServerChild {
 public:
  static Result<std::unique_ptr<ServerChild>> Start(const Options& options) {
    char dir[] = "/tmp/sbx_server_bench.XXXXXX";
    if (::mkdtemp(dir) == nullptr) return SysError(ErrorCode::kIo, "mkdtemp");
    std::unique_ptr<ServerChild> child(new ServerChild(dir));
    std::vector<std::string> args = {options.sbx,      "serve",
                                     "--listen",       "unix:" + child->socket_,
                                     "--pool",         std::to_string(options.pool),
                                     "--max-sessions", "64"};
    if (!options.image.empty()) args.insert(args.end(), {"--image", options.image});
    std::vector<char*> argv;
    for (std::string& arg : args) argv.push_back(arg.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, child->log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                     0600);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    int spawned = posix_spawn(&child->pid_, argv[0], &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (spawned != 0) return SysError(ErrorCode::kIo, "spawn " + options.sbx, spawned);
    // It answers once its probe sandbox and its pool are up.
    const auto deadline = Clock::now() + std::chrono::seconds(120);
    while (Clock::now() < deadline) {
      int status;
      if (::waitpid(child->pid_, &status, WNOHANG) == child->pid_) {
        child->pid_ = 0;
        return MakeError(ErrorCode::kSetupFailed, "sbx serve exited: " + child->Log());
      }
      if (auto client = UnixHttpClient::Connect(child->socket_)) {
        if (auto health = (*client)->Request("GET", "/v1/health", "");
            health && health->first == 200) {
          return child;
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return MakeError(ErrorCode::kSetupFailed, "sbx serve did not answer in 120 s: " + child->Log());
  }
  ~ServerChild() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      int status;
      ::waitpid(pid_, &status, 0);
    }
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  const std::string& socket() const { return socket_; }
  pid_t pid() const { return pid_; }
  std::string Log() const {
    std::ifstream in(log_);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

 private:
  explicit ServerChild(std::string dir)
      : dir_(dir), socket_(dir + "/sbx.sock"), log_(dir + "/serve.log") {}
  std::string dir_, socket_, log_;
  pid_t pid_ = 0;
};

// A client connection with a session of its own on the server.
struct ServerSide {
  std::unique_ptr<UnixHttpClient> client;
  std::string session_target;  // GET: the transport floor, a round trip that runs nothing
  std::string execute_target;
  std::string execute_body;
};

Result<ServerSide> OpenServerSession(const ServerChild& server) {
  ServerSide side;
  auto client = UnixHttpClient::Connect(server.socket());
  if (!client) return client.error();
  side.client = std::move(*client);
  SBX_ASSIGN_OR_RETURN(auto created, side.client->Request("POST", "/v1/sessions", "{}"));
  if (created.first != 201)
    return MakeError(ErrorCode::kSetupFailed, "POST /v1/sessions: " + created.second);
  const std::string id = nlohmann::json::parse(created.second).at("id").get<std::string>();
  side.session_target = "/v1/sessions/" + id;
  side.execute_target = side.session_target + "/execute";
  side.execute_body =
      nlohmann::json{{"code_blocks", {{{"language", "python"}, {"code", kCode}}}}}.dump();
  return side;
}

// The execute round trip; the response is checked after the clock stops when `parse` (a full
// JSON parse), else by substrings (throughput: the client's own parse would crowd two cores).
Result<void> ServerExecute(ServerSide& side, bool parse) {
  SBX_ASSIGN_OR_RETURN(auto sent,
                       side.client->Request("POST", side.execute_target, side.execute_body));
  const auto& response = sent;
  bool ok = response.first == 200;
  if (ok && parse) {
    auto result = nlohmann::json::parse(response.second);
    ok = result.at("exit_code") == 0 && result.at("output") == kExpectedOutput;
  } else if (ok) {
    ok = response.second.find("\"exit_code\":0,") != std::string::npos &&
         response.second.find("\"output\":\"2\\n\"") != std::string::npos;
  }
  if (!ok)
    return MakeError(ErrorCode::kInternal, "server execute: " + response.second.substr(0, 300));
  return {};
}

// An HTTP round trip on the same connection that runs no code: what the transport alone costs.
Result<void> ServerRoundTrip(ServerSide& side) {
  SBX_ASSIGN_OR_RETURN(auto sent, side.client->Request("GET", side.session_target, ""));
  if (sent.first != 200) return MakeError(ErrorCode::kInternal, "GET session: " + sent.second.substr(0, 300));
  return {};
}

Result<void> InProcessExecute(SessionExecutor& session) {
  SBX_ASSIGN_OR_RETURN(auto result, session.Execute({{"python", kCode}}));
  if (result.exit_code != 0 || result.output != kExpectedOutput) {
    return MakeError(ErrorCode::kInternal, "in-process execute: " + result.output.substr(0, 300));
  }
  return {};
}

// In-process sessions with the server's defaults: cold, or from a pool like the server's.
class InProcessSessions {
 public:
  static Result<InProcessSessions> Create(const Options& options) {
    InProcessSessions sessions;
    sessions.image_ = options.image;
    if (options.pool > 0) {
      executor::PoolOptions pool_options;
      pool_options.image_dir = options.image;
      pool_options.warm_sessions = static_cast<size_t>(options.pool);
      SBX_ASSIGN_OR_RETURN(auto pool, executor::SessionPool::Create(std::move(pool_options)));
      sessions.pool_ = std::move(pool);
    }
    return sessions;
  }
  Result<std::unique_ptr<SessionExecutor>> Open() {
    Policy policy;
    if (pool_) {
      executor::PooledSessionOptions pooled;
      pooled.timeout_seconds = policy.limits.timeout_seconds;
      SBX_ASSIGN_OR_RETURN(auto session, pool_->Acquire(std::move(pooled)));
      return std::unique_ptr<SessionExecutor>(std::move(session));
    }
    executor::ExecutorOptions executor_options;
    executor_options.image_dir = image_;
    return SessionExecutor::Create(std::move(executor_options));
  }
  void WaitForWarm(int count) {
    if (pool_) pool_->WaitForWarm(static_cast<size_t>(count), 30);
  }

 private:
  std::string image_;
  std::unique_ptr<executor::SessionPool> pool_;
};

struct Latency {
  std::vector<double> server_ms, in_process_ms;
  std::vector<double> transport_ms;  // GET of the session: the HTTP round trip alone
};

Result<Latency> MeasureLatency(ServerSide& server, SessionExecutor& in_process, int rounds) {
  Latency latency;
  for (int round = -kWarmupRounds; round < rounds; ++round) {
    for (int turn = 0; turn < 2; ++turn) {
      const bool server_turn = (turn == 0) == (round % 2 == 0);  // the order alternates
      auto start = Clock::now();
      if (server_turn) {
        SBX_TRY(ServerExecute(server, /*parse=*/true));
      } else {
        SBX_TRY(InProcessExecute(in_process));
      }
      double ms = MsSince(start);
      if (round >= 0) (server_turn ? latency.server_ms : latency.in_process_ms).push_back(ms);
    }
    auto start = Clock::now();
    SBX_TRY(ServerRoundTrip(server));
    if (round >= 0) latency.transport_ms.push_back(MsSince(start));
  }
  return latency;
}

struct Rate {
  double per_second;
  long executions;
};

// Executions per second of `workers` threads, each calling its `execute` until the deadline.
Result<Rate> MeasureRate(std::vector<std::function<Result<void>()>>& executes, double seconds) {
  std::atomic<long> done{0};
  std::atomic<bool> failed{false};
  std::string failure;
  std::mutex failure_mutex;
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::duration<double>(seconds);
  std::vector<std::thread> threads;
  for (auto& execute : executes) {
    threads.emplace_back([&] {
      while (Clock::now() < deadline && !failed) {
        if (auto ran = execute(); !ran) {
          std::lock_guard lock(failure_mutex);
          failure = ran.error().ToString();
          failed = true;
          return;
        }
        ++done;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  if (failed) return MakeError(ErrorCode::kInternal, failure);
  return Rate{done / (MsSince(start) / 1000), done.load()};
}

struct Throughput {
  int connections = 0;
  std::vector<double> server_rate, in_process_rate;
  // CPU microseconds an execution costs sbx-serve (its threads) and the bench's own process
  // (its client threads; in process: the executor and its threads). Python's are left out:
  // the same on both sides.
  std::vector<double> server_cpu_us, client_cpu_us, in_process_cpu_us;
};

std::string Fixed(double value, int digits) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.*f", digits, value);
  return text;
}

void PrintLatency(const Latency& latency, bool markdown) {
  std::vector<double> diffs, ratios;
  for (size_t i = 0; i < latency.server_ms.size(); ++i) {
    diffs.push_back(latency.server_ms[i] - latency.in_process_ms[i]);
    ratios.push_back(latency.server_ms[i] / latency.in_process_ms[i]);
  }
  const double added = Quantile(diffs, 0.5);
  const std::string verdict = added <= 1.0 ? "met" : "NOT met";
  if (markdown) {
    std::printf("| execute round trip | median ms | p90 ms |\n|---|---:|---:|\n");
    std::printf("| in-process executor | %s | %s |\n",
                Fixed(Quantile(latency.in_process_ms, 0.5), 3).c_str(),
                Fixed(Quantile(latency.in_process_ms, 0.9), 3).c_str());
    std::printf("| `sbx serve` (Unix socket) | %s | %s |\n",
                Fixed(Quantile(latency.server_ms, 0.5), 3).c_str(),
                Fixed(Quantile(latency.server_ms, 0.9), 3).c_str());
    std::printf("| server adds (median of per-round differences; ratio) | **+%s** (%sx) | |\n\n",
                Fixed(added, 3).c_str(), Fixed(Quantile(ratios, 0.5), 2).c_str());
  } else {
    std::printf("%-36s median %8.3f ms   p90 %8.3f ms\n", "in-process executor",
                Quantile(latency.in_process_ms, 0.5), Quantile(latency.in_process_ms, 0.9));
    std::printf("%-36s median %8.3f ms   p90 %8.3f ms\n", "sbx serve (Unix socket)",
                Quantile(latency.server_ms, 0.5), Quantile(latency.server_ms, 0.9));
    std::printf("%-36s %+8.3f ms (median of per-round differences; p90 %+.3f), %.2fx\n",
                "server adds", added, Quantile(diffs, 0.9), Quantile(ratios, 0.5));
  }
  std::printf("target: the server adds at most 1 ms to the median: %s (%zu rounds)\n",
              verdict.c_str(), diffs.size());
  // One connection runs one request at a time, so its rate is 1 / latency: the transport's own
  // round trip bounds the ratio to in process, whatever the server does.
  const double transport = Quantile(latency.transport_ms, 0.5);
  const double in_process = Quantile(latency.in_process_ms, 0.5);
  std::printf("transport floor: an HTTP round trip that runs nothing (GET of the session) median "
              "%.3f ms; over one connection at most %.1f%% of the in-process rate is reachable\n\n",
              transport, 100 * in_process / (in_process + transport));
}

void PrintThroughput(const std::vector<Throughput>& rows, bool markdown) {
  if (markdown) {
    std::printf(
        "| connections (threads) | in-process /s | `sbx serve` /s | server / in-process |"
        " CPU us per execution: in-process / sbx-serve + client |\n");
    std::printf("|---:|---:|---:|---:|---:|\n");
  }
  for (const Throughput& row : rows) {
    const double in_process = Quantile(row.in_process_rate, 0.5);
    const double server = Quantile(row.server_rate, 0.5);
    const double ratio = in_process > 0 ? server / in_process : 0;
    const double in_process_cpu = Quantile(row.in_process_cpu_us, 0.5);
    const double server_cpu = Quantile(row.server_cpu_us, 0.5);
    const double client_cpu = Quantile(row.client_cpu_us, 0.5);
    if (markdown) {
      std::printf("| %d | %s | %s | %s%% | %s / %s + %s |\n", row.connections,
                  Fixed(in_process, 1).c_str(), Fixed(server, 1).c_str(),
                  Fixed(ratio * 100, 1).c_str(), Fixed(in_process_cpu, 0).c_str(),
                  Fixed(server_cpu, 0).c_str(), Fixed(client_cpu, 0).c_str());
    } else {
      std::printf("%d connection%s: in-process %8.1f /s   server %8.1f /s   %5.1f%%  (%s)\n",
                  row.connections, row.connections == 1 ? " " : "s", in_process, server,
                  ratio * 100, ratio >= 0.9 ? "target >= 90%: met" : "target >= 90%: NOT met");
      std::printf("    CPU per execution: in-process %.0f us; sbx-serve %.0f us + client %.0f us\n",
                  in_process_cpu, server_cpu, client_cpu);
    }
  }
}

constexpr char kUsage[] =
    "usage: sbx_server_bench [--rounds N] [--seconds S] [--repeats R] [--pool N] [--image DIR]\n"
    "                        [--sbx PATH] [--markdown]\n"
    "--rounds: latency rounds (each one execution per side, the order alternating; default 200)\n"
    "--seconds, --repeats: each throughput measurement's length (3) and how many times each\n"
    "  side is measured per connection count, alternating (3; the median is shown)\n"
    "--pool: warm sessions on both sides (0, the default: every session starts cold)\n";

std::optional<Options> ParseArgs(int argc, char** argv) {
  Options options;
  options.sbx = (std::filesystem::read_symlink("/proc/self/exe").parent_path() / "sbx").string();
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--markdown") {
      options.markdown = true;
      continue;
    }
    if (i + 1 >= argc) return std::nullopt;
    const char* value = argv[++i];
    if (arg == "--rounds") {
      options.rounds = std::atoi(value);
    } else if (arg == "--seconds") {
      options.seconds = std::atof(value);
    } else if (arg == "--repeats") {
      options.repeats = std::atoi(value);
    } else if (arg == "--pool") {
      options.pool = std::atoi(value);
    } else if (arg == "--image") {
      options.image = value;
    } else if (arg == "--sbx") {
      options.sbx = value;
    } else {
      return std::nullopt;
    }
  }
  if (options.rounds < 1 || options.seconds <= 0 || options.repeats < 1 || options.pool < 0 ||
      options.pool > 64) {
    return std::nullopt;
  }
  return options;
}

int Fail(const std::string& what, const Error& error) {
  std::fprintf(stderr, "sbx_server_bench: %s: %s\n", what.c_str(), error.ToString().c_str());
  return 1;
}

int Main(int argc, char** argv) {
  std::optional<Options> parsed = ParseArgs(argc, argv);
  if (!parsed) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  const Options options = *parsed;
  char date[64];
  time_t now = time(nullptr);
  strftime(date, sizeof(date), "%Y-%m-%d %H:%M UTC", gmtime(&now));
  std::printf("date: %s; cpus online: %ld; load average at start: %s\n", date,
              sysconf(_SC_NPROCESSORS_ONLN), LoadAverage().c_str());
  std::printf(
      "code: %s; sessions: %s\n\n", nlohmann::json(kCode).dump().c_str(),
      options.pool > 0 ? ("pooled (--pool " + std::to_string(options.pool) + ")").c_str() : "cold");
  std::fflush(stdout);

  auto server = ServerChild::Start(options);
  if (!server) return Fail("start sbx serve", server.error());
  auto local = InProcessSessions::Create(options);
  if (!local) return Fail("in-process pool", local.error());
  const int most = *std::max_element(std::begin(kConnectionCounts), std::end(kConnectionCounts));
  std::vector<ServerSide> server_sides;
  std::vector<std::unique_ptr<SessionExecutor>> in_process;
  for (int i = 0; i < most; ++i) {
    auto side = OpenServerSession(**server);
    if (!side) return Fail("server session", side.error());
    server_sides.push_back(std::move(*side));
    auto session = local->Open();
    if (!session) return Fail("in-process session", session.error());
    in_process.push_back(std::move(*session));
  }
  local->WaitForWarm(options.pool);

  std::fprintf(stderr, "latency: %d rounds...\n", options.rounds);
  auto latency = MeasureLatency(server_sides[0], *in_process[0], options.rounds);
  if (!latency) return Fail("latency", latency.error());
  PrintLatency(*latency, options.markdown);
  std::fflush(stdout);

  std::vector<Throughput> rows;
  for (int connections : kConnectionCounts) {
    Throughput row;
    row.connections = connections;
    rows.push_back(row);
  }
  for (int repeat = 0; repeat < options.repeats; ++repeat) {
    for (Throughput& row : rows) {
      for (int turn = 0; turn < 2; ++turn) {
        const bool server_turn = (turn == 0) == (repeat % 2 == 0);
        std::fprintf(stderr, "throughput: repeat %d/%d, %d %s...\n", repeat + 1, options.repeats,
                     row.connections,
                     server_turn ? "connections to the server" : "in-process threads");
        std::vector<std::function<Result<void>()>> executes;
        for (int i = 0; i < row.connections; ++i) {
          if (server_turn) {
            executes.push_back([side = &server_sides[i]] { return ServerExecute(*side, false); });
          } else {
            executes.push_back(
                [session = in_process[i].get()] { return InProcessExecute(*session); });
          }
        }
        const double server_cpu = ProcessCpuMs((*server)->pid());
        const double own_cpu = ProcessCpuMs(::getpid());
        auto rate = MeasureRate(executes, options.seconds);
        if (!rate) return Fail("throughput", rate.error());
        const double us_each = 1000.0 / static_cast<double>(std::max(1L, rate->executions));
        const double own_us = (ProcessCpuMs(::getpid()) - own_cpu) * us_each;
        if (server_turn) {
          row.server_rate.push_back(rate->per_second);
          row.server_cpu_us.push_back((ProcessCpuMs((*server)->pid()) - server_cpu) * us_each);
          row.client_cpu_us.push_back(own_us);
        } else {
          row.in_process_rate.push_back(rate->per_second);
          row.in_process_cpu_us.push_back(own_us);
        }
      }
    }
  }
  PrintThroughput(rows, options.markdown);
  std::printf("\nload average at end: %s\n", LoadAverage().c_str());
  return 0;
}

}  // namespace
}  // namespace sbx::bench

int main(int argc, char** argv) { return sbx::bench::Main(argc, argv); }
