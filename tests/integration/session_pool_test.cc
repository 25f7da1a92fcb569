// The warm pool against the real image: state, isolation between sessions and from the host,
// the seccomp filter, limits, and cleanup when sessions, the pool or its owner end.
#include "src/executor/session_pool.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "sandbox/workspace/workspace.h"
#include "sandbox_fixture.h"
#include "session_checks.h"
#include "src/executor/process_memory.h"
#include "tests/integration/test_policy.h"

namespace sbx::executor {
namespace {

using sbx::testing::CgroupsOf;
using sbx::testing::EntriesWithPrefix;
using sbx::testing::HostMountCount;
using sbx::testing::HostProcessesWith;
using sbx::testing::TestImage;
using sbx::testing::WallClockScale;

PoolOptions Options(size_t warm = 2) {
  PoolOptions options;
  options.image_dir = TestImage();
  options.warm_sessions = warm;
  return options;
}

std::unique_ptr<SessionPool> NewPool(PoolOptions options = Options()) {
  auto pool = SessionPool::Create(std::move(options));
  EXPECT_TRUE(pool) << pool.error().ToString();
  return pool ? std::move(*pool) : nullptr;
}

std::unique_ptr<PooledSessionExecutor> Acquire(SessionPool& pool, PooledSessionOptions options = {}) {
  options.timeout_seconds = 20 * WallClockScale();
  options.grace_seconds = 1;
  auto session = pool.Acquire(std::move(options));
  EXPECT_TRUE(session) << session.error().ToString();
  return session ? std::move(*session) : nullptr;
}

CodeResult RunBlock(CodeExecutor& executor, const std::string& language, const std::string& source) {
  auto result = executor.Execute({{language, source}});
  EXPECT_TRUE(result) << result.error().ToString();
  return result ? *result : CodeResult{};
}

CodeResult Python(CodeExecutor& executor, const std::string& source) { return RunBlock(executor, "python", source); }

TEST(SessionPool, StatePersistsWithinAPooledSession) {
  auto pool = NewPool();
  ASSERT_TRUE(pool);
  auto session = Acquire(*pool);
  ASSERT_TRUE(session);
  CodeResult first = Python(*session, "import pandas as pd\nx = 41\nopen('notes.txt', 'w').write('hi')");
  EXPECT_EQ(first.exit_code, 0) << first.output;
  EXPECT_EQ(first.files_changed, std::vector<std::string>{"notes.txt"});
  CodeResult second = Python(*session, "print(open('notes.txt').read())\npd.DataFrame({'a': range(1000)}).describe()\nx + 1");
  EXPECT_EQ(second.exit_code, 0) << second.output;
  EXPECT_EQ(second.stdout_text, "hi\n");
  EXPECT_EQ(second.value.value_or(""), "42");
}

// The zygote forks through the session library and runs CPython's after-fork callbacks itself
// (zygote_prefault.Fork): `random` reseeds in each child, so no two sessions draw the same
// numbers. The control: one session draws the same numbers again once it reseeds with the state
// it started from.
TEST(SessionPool, EachSessionDrawsItsOwnRandomNumbers) {
  auto pool = NewPool(Options(2));
  ASSERT_TRUE(pool);
  auto a = Acquire(*pool);
  auto b = Acquire(*pool);
  ASSERT_TRUE(a && b);
  const std::string draw = "import random\nstate = random.getstate()\nrandom.getrandbits(64)";
  const std::string from_a = Python(*a, draw).value.value_or("");
  const std::string from_b = Python(*b, draw).value.value_or("");
  ASSERT_FALSE(from_a.empty());
  EXPECT_NE(from_a, from_b) << "two sessions drew the same 64 random bits";
  EXPECT_EQ(Python(*a, "random.setstate(state)\nrandom.getrandbits(64)").value.value_or(""), from_a);
}

// The zygote runs the warm-up itself, and learns which of its pages a first execution writes by
// running the pre-fault code in a throwaway fork; each session copies those pages before it is
// handed out. Nothing of either may reach a session: not their variables, not their files.
TEST(SessionPool, PrefaultedSessionCarriesNothingOfTheWarmUp) {
  PoolOptions options = Options(1);
  const std::string marker = "sbx_warm_marker = 42\nopen('/tmp/sbx-warm-marker', 'w').write('x')\n";
  options.warmup_code = kDefaultZygoteWarmup + marker;
  options.prefault_code = kDefaultPrefaultCode + marker;
  auto pool = NewPool(std::move(options));
  ASSERT_TRUE(pool);
  auto session = Acquire(*pool);
  ASSERT_TRUE(session);
  CodeResult seen = Python(*session,
                           "import os\nprint(sorted(k for k in ('sbx_warm_marker', 'df', 'fig') if k in globals()))\n"
                           "import glob\nprint(os.path.exists('/tmp/sbx-warm-marker'), "
                           "[sorted(os.listdir(d)) for d in glob.glob('/tmp/.sbx-cells-*')])\n"
                           "print(sorted(os.listdir('/workspace')))");
  EXPECT_EQ(seen.exit_code, 0) << seen.output;
  EXPECT_EQ(seen.stdout_text, "[]\nFalse [['cell-1.py']]\n[]\n");
  // The control: the same names do exist once a cell of the session itself defines them.
  CodeResult own = Python(*session, "sbx_warm_marker = 1\nopen('/tmp/sbx-warm-marker', 'w').write('x')\n"
                                    "import os\nprint('sbx_warm_marker' in globals(), os.path.exists('/tmp/sbx-warm-marker'))");
  EXPECT_EQ(own.stdout_text, "True True\n") << own.output;
}

// Page faults a describe takes in a fresh pooled session's first cell and in its second.
std::pair<long, long> DescribeFaults(SessionPool& pool) {
  auto session = Acquire(pool);
  if (!session) return {-1, -1};
  const std::string code =
      "import resource\nf0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt\n"
      "import pandas as pd\npd.DataFrame({'a': range(1000)}).describe()\n"
      "resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0";
  const long first = std::stol(Python(*session, code).value.value_or("-1"));
  const long second = std::stol(Python(*session, code).value.value_or("-1"));
  return {first, second};
}

// The pre-faulted pages are the ones a first describe writes: with the whole set pre-copied
// while the session is prepared (a budget above it) it takes few page faults, about as few as
// the same code run a second time (without the pre-fault, ~1,300 against ~60).
TEST(SessionPool, FirstExecutionFindsItsPagesAlreadyCopied) {
  PoolOptions options = Options(1);
  options.prefault_budget_bytes = kMaxPrefaultBudgetBytes;
  options.first_execution_prefault_bytes = 0;
  auto pool = NewPool(options);
  ASSERT_TRUE(pool);
  const auto [first, second] = DescribeFaults(*pool);
  ASSERT_GE(first, 0);
  ASSERT_GE(second, 0);
  EXPECT_LT(first, second + 400) << "first " << first << " faults, second " << second;
}

// With no budget while prepared, the learned pages wait for the first execution: an idle session
// holds no more than one of a pool without any pre-fault, and the first cell then finds them
// copied (it takes about as few faults as a second run). The control, a pool with both budgets
// 0, shows the faults the batch saves.
TEST(SessionPool, FirstExecutionCopiesTheLearnedPagesBeforeTheCell) {
  long idle_kib[2] = {0, 0};
  std::pair<long, long> faults[2];
  for (int with = 0; with < 2; ++with) {
    PoolOptions options = Options(1);
    options.prefault_budget_bytes = 0;
    options.first_execution_prefault_bytes = with ? kMaxPrefaultBudgetBytes : 0;
    auto pool = NewPool(options);
    ASSERT_TRUE(pool);
    EXPECT_EQ(pool->prefault_pages(), 0u);
    if (with) {
      EXPECT_GT(pool->first_execution_prefault_pages(), 1000u);
    } else {
      EXPECT_EQ(pool->first_execution_prefault_pages(), 0u);
    }
    {
      auto idle = Acquire(*pool);
      ASSERT_TRUE(idle);
      idle_kib[with] = static_cast<long>(PrivateMemoryBytes(idle->host_pid()) / 1024);
    }
    faults[with] = DescribeFaults(*pool);
    ASSERT_GE(faults[with].first, 0);
    ASSERT_GE(faults[with].second, 0);
  }
  EXPECT_LT(idle_kib[1], idle_kib[0] + 1024) << "idle: " << idle_kib[1] << " KiB against " << idle_kib[0];
  EXPECT_LT(faults[1].first, faults[1].second + 400)
      << "first " << faults[1].first << " faults, second " << faults[1].second;
  EXPECT_GT(faults[0].first, faults[0].second + 400)
      << "without: first " << faults[0].first << " faults, second " << faults[0].second;
}

// The budget caps what an idle session holds: a pool with 4 MiB pre-copies at most 1,024 pages,
// and its idle sessions hold at most about that much more private memory than those of a pool
// without the pre-fault (the control: budget 0, nothing learned, nothing copied), and more than
// a little: part of the budget goes to pages the set-up copies anyway (at the fork), the rest
// to pages only a first execution would write.
TEST(SessionPool, PrefaultStaysWithinItsBudget) {
  constexpr size_t kBudget = size_t{4} << 20;
  // One idle session's private memory varies by +-250 KiB from session to session (what the
  // zygote's and the driver's start happen to touch): the median of five per pool.
  constexpr int kSessions = 5;
  long idle_kib[2] = {0, 0};
  size_t pages[2] = {0, 0};
  for (int with = 0; with < 2; ++with) {
    PoolOptions options = Options(1);
    options.prefault_budget_bytes = with ? kBudget : 0;
    options.first_execution_prefault_bytes = 0;
    auto pool = NewPool(options);
    ASSERT_TRUE(pool);
    pages[with] = pool->prefault_pages();
    std::vector<long> kib;
    for (int i = 0; i < kSessions; ++i) {
      auto session = Acquire(*pool);
      ASSERT_TRUE(session);
      kib.push_back(static_cast<long>(PrivateMemoryBytes(session->host_pid()) / 1024));
      ASSERT_GT(kib.back(), 0);
    }
    std::sort(kib.begin(), kib.end());
    idle_kib[with] = kib[kSessions / 2];
  }
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  EXPECT_EQ(pages[0], 0u);
  EXPECT_GT(pages[1], kBudget / page / 2) << "a typical first execution writes more than the budget";
  EXPECT_LE(pages[1], kBudget / page);
  const long grown = idle_kib[1] - idle_kib[0];
  EXPECT_GT(grown, 256) << idle_kib[1] << " KiB pre-faulted, " << idle_kib[0] << " KiB without";
  EXPECT_LT(grown, static_cast<long>(kBudget / 1024) + 256) << idle_kib[1] << " KiB pre-faulted, " << idle_kib[0]
                                                              << " KiB without";
}

TEST(SessionPool, PrefaultBudgetOverTheLimitIsRefused) {
  PoolOptions options = Options(1);
  options.prefault_budget_bytes = kMaxPrefaultBudgetBytes + 1;
  auto pool = SessionPool::Create(options);
  ASSERT_FALSE(pool);
  EXPECT_EQ(pool.error().code, ErrorCode::kInvalidInput);
  EXPECT_NE(pool.error().message.find("prefault_budget_bytes"), std::string::npos) << pool.error().ToString();
}

// A pooled session always gets a fresh network namespace with lo alone: a policy asking for
// more (an allowlist or the host's network) is refused, saying what it must be.
TEST(SessionPool, NetworkPoliciesOtherThanNoneAreRefused) {
  for (NetworkMode mode : {NetworkMode::kAllowlist, NetworkMode::kHost}) {
    PoolOptions options = Options(1);
    options.policy = testing::Changed(options.policy, [&](Policy& p) { p.network = mode; });
    auto pool = SessionPool::Create(options);
    ASSERT_FALSE(pool);
    EXPECT_EQ(pool.error().code, ErrorCode::kInvalidInput);
    EXPECT_NE(pool.error().message.find("network must be \"none\""), std::string::npos)
        << pool.error().ToString();
  }
}

// A pool of `warm` sessions that defers refills by `deferral_seconds`, once all are warm.
std::unique_ptr<SessionPool> FullPool(size_t warm, double deferral_seconds) {
  PoolOptions options = Options(warm);
  options.refill_deferral_seconds = deferral_seconds;
  auto pool = NewPool(options);
  if (pool) {
    EXPECT_EQ(pool->WaitForWarm(warm, 120 * WallClockScale()), warm);
  }
  return pool;
}

TEST(SessionPool, RefillWaitsWhileASessionExecutesButNotForever) {
  // Two seconds of deferral: far longer than a spawn (35-100 ms), so a refill that ignored it
  // would show within the first half second.
  auto pool = FullPool(2, 2);
  ASSERT_TRUE(pool);
  auto busy = Acquire(*pool);  // busy until its first execution ends
  ASSERT_TRUE(busy);
  EXPECT_EQ(pool->WaitForWarm(2, 0.5), 1u) << "refilled while the acquired session waited to execute";
  EXPECT_EQ(Python(*busy, "print(6 * 7)").stdout_text, "42\n");
  EXPECT_EQ(pool->WaitForWarm(2, 60 * WallClockScale()), 2u) << "no refill once the execution ended";

  // A session that never executes holds the refill back only for the deferral's length.
  auto idle = Acquire(*pool);
  ASSERT_TRUE(idle);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(pool->WaitForWarm(2, 60 * WallClockScale()), 2u) << "refill deferred past its limit";
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(1500));

  // A closed session holds nothing back, though it never executed.
  idle.reset();
  auto closed = Acquire(*pool);
  ASSERT_TRUE(closed);
  closed->Close();
  EXPECT_EQ(pool->WaitForWarm(2, 1.2), 2u) << "a closed session still deferred the refill";
}

TEST(SessionPool, ADryPoolRefillsWithoutWaitingForExecutions) {
  auto pool = FullPool(1, 60);  // the longest deferral allowed; the wait below stays under it
  ASSERT_TRUE(pool);
  auto busy = Acquire(*pool);  // takes the only warm session: the pool is dry
  ASSERT_TRUE(busy);
  EXPECT_EQ(pool->WaitForWarm(1, 40), 1u) << "a dry pool waited for the deferral";
}

TEST(SessionPool, BelowHalfTheWarmSessionsARefillNoLongerWaits) {
  auto pool = FullPool(4, 60);  // the longest deferral allowed; every wait below stays under it
  ASSERT_TRUE(pool);
  std::vector<std::unique_ptr<PooledSessionExecutor>> busy;  // each busy until its first execution
  busy.push_back(Acquire(*pool));
  EXPECT_EQ(pool->WaitForWarm(4, 1.0), 3u) << "three of four warm: the refill should wait for the execution";
  busy.push_back(Acquire(*pool));
  busy.push_back(Acquire(*pool));
  // One of four left: clients are taking sessions faster than a deferred refill makes them.
  EXPECT_GE(pool->WaitForWarm(2, 40), 2u) << "a pool below half its warm sessions waited for the deferral";
}

// A pool that holds at most two sessions (max_sessions), with both taken.
struct PoolOfTwo {
  std::unique_ptr<SessionPool> pool;
  std::unique_ptr<PooledSessionExecutor> first, second;
};

PoolOfTwo FullPoolOfTwo() {
  PoolOptions options = Options(0);
  options.max_sessions = 2;
  PoolOfTwo full{NewPool(options), nullptr, nullptr};
  if (full.pool) {
    full.first = Acquire(*full.pool);
    full.second = Acquire(*full.pool);
  }
  return full;
}

TEST(SessionPool, SessionsBeyondMaxSessionsAreRefusedUntilOneEnds) {
  auto [pool, first, second] = FullPoolOfTwo();
  ASSERT_TRUE(pool && first && second);
  auto third = pool->Acquire();
  ASSERT_FALSE(third);
  EXPECT_EQ(third.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(third.error().message.find("max_sessions"), std::string::npos) << third.error().ToString();
  first.reset();  // still ending: Acquire waits for it to be gone rather than refuse
  auto again = Acquire(*pool);
  ASSERT_TRUE(again);
  EXPECT_EQ(Python(*again, "print(6 * 7)").stdout_text, "42\n");
}

TEST(SessionPool, AReplacementWaitsForEndingSessionsAtMaxSessions) {
  auto [pool, first, second] = FullPoolOfTwo();
  ASSERT_TRUE(pool && first && second);
  (void)Python(*second, "import os; os._exit(3)");  // its session is lost, its place given back
  auto third = Acquire(*pool);  // takes that place: the pool is full again
  ASSERT_TRUE(third);
  first.reset();  // still ending while the second replaces its session
  const CodeResult replaced = Python(*second, "print(6 * 7)");
  EXPECT_EQ(replaced.stdout_text, "42\n") << replaced.notice;
  EXPECT_NE(replaced.notice.find("fresh session"), std::string::npos) << replaced.notice;
}

TEST(SessionPool, ManySessionsFitInTheZygotesMemoryLimit) {
  // Each session leaves ~2 MiB charged to the zygote's cgroup (kSessionResidueBytes), and the
  // pages it copies at its fork another ~2 MiB (within prefault_budget_bytes). With the zygote
  // limited to the policy's 160 MiB alone, its cgroup's OOM killer took it (and with it every
  // session) at about 50 sessions; with room for the residue alone, at about 1,000 idle sessions
  // of the default policy. Here the policy's 64 MiB leaves the zygote's own memory only the
  // room the sessions' allowances give, so a shortfall of either shows.
  PoolOptions options = Options(0);
  options.policy = testing::Changed(options.policy, [](Policy& p) { p.limits.memory_bytes = 64ull << 20; });
  options.max_sessions = 100;
  auto pool = NewPool(options);
  ASSERT_TRUE(pool);
  std::vector<std::unique_ptr<PooledSessionExecutor>> sessions;
  for (int i = 0; i < 96; ++i) {
    auto session = pool->Acquire();
    ASSERT_TRUE(session) << "session " << i << ": " << session.error().ToString();
    sessions.push_back(std::move(*session));
  }
  for (auto& session : sessions) EXPECT_EQ(Python(*session, "print(6 * 7)").stdout_text, "42\n");
}

TEST(SessionPool, RefillDeferralOutOfRangeIsRefused) {
  PoolOptions options = Options(1);
  options.refill_deferral_seconds = -1;
  auto pool = SessionPool::Create(options);
  ASSERT_FALSE(pool);
  EXPECT_NE(pool.error().ToString().find("refill_deferral_seconds"), std::string::npos) << pool.error().ToString();
}

TEST(SessionPool, ManifestIsStagedIntoThePooledWorkspace) {
  auto pool = NewPool();
  ASSERT_TRUE(pool);
  PooledSessionOptions options;
  options.manifest.AddBytes("in/hello.txt", "hello\n");
  auto session = Acquire(*pool, std::move(options));
  ASSERT_TRUE(session);
  EXPECT_EQ(Python(*session, "print(open('/workspace/in/hello.txt').read(), end='')").stdout_text, "hello\n");
}

// Python that prints how many other processes' command lines hold `head` + `tail` (split so
// that the scanner's own command line, on the host, never holds the marker).
std::string MarkerScan(const std::string& head, const std::string& tail) {
  return "import os\n"
         "marker = ('" + head + "' + '" + tail + "').encode()\n"
         "found = 0\n"
         "for pid in filter(str.isdigit, os.listdir('/proc')):\n"
         "    try:\n"
         "        cmdline = open('/proc/' + pid + '/cmdline', 'rb').read()\n"
         "        found += pid != str(os.getpid()) and marker in cmdline\n"
         "    except OSError:\n"
         "        pass\n"
         "print('processes', found)\n";
}

// The namespace links of the session's driver, and the keys of its SysV shared memory segments.
constexpr const char* kNamespacesAndIpc =
    "import os\n"
    "names = ('net', 'ipc', 'pid', 'mnt', 'uts')\n"
    "print(' '.join(os.readlink('/proc/self/ns/' + n) for n in names))\n"
    "segments = open('/proc/sysvipc/shm').readlines()[1:]\n"
    "print('shm keys', sorted(int(l.split()[0]) for l in segments))\n";

constexpr int kShmKey = 0x5b0a11;

// Files a leaves where b could look, and a walk of every writable place for a's secret.
constexpr const char* kFileScan =
    "import os\n"
    "places = ['/workspace/a.txt', '/tmp/a-tmp', '/dev/shm/a-shm']\n"
    "print('files', [p for p in places if os.path.exists(p)])\n"
    "hits = 0\n"
    "for top in ('/workspace', '/tmp', '/dev/shm'):\n"
    "    for root, _, names in os.walk(top):\n"
    "        for name in names:\n"
    "            try:\n"
    "                hits += b'secret-' + b'of-a' in open(os.path.join(root, name), 'rb').read()\n"
    "            except OSError:\n"
    "                pass\n"
    "print('secrets', hits)\n";

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  for (size_t end; (end = text.find('\n', start)) != std::string::npos; start = end + 1)
    lines.push_back(text.substr(start, end - start));
  return lines;
}

// Two sessions of one pool share no process, namespace, IPC object or file. Every probe runs
// in a too, where it finds a's own things (and on the host for the processes), so a probe
// that could not see them would fail there.
TEST(SessionPool, PooledSessionsCannotSeeEachOther) {
  auto pool = NewPool();
  ASSERT_TRUE(pool);
  auto a = Acquire(*pool);
  auto b = Acquire(*pool);
  ASSERT_TRUE(a && b);
  const std::string tail = "marker-" + std::to_string(::getpid());
  const std::string marker = "sbx-pool-" + tail;
  CodeResult planted = RunBlock(
      *a, "bash",
      "(exec -a " + marker + " sleep 300 &); for p in /workspace/a.txt /tmp/a-tmp /dev/shm/a-shm; "
      "do echo secret-of-a > $p || exit 1; done");
  ASSERT_EQ(planted.exit_code, 0) << planted.output;
  CodeResult shm = Python(*a,
                          "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
                          "print(libc.shmget(" +
                              std::to_string(kShmKey) + ", 4096, 0o1600) >= 0)");
  ASSERT_EQ(shm.stdout_text, "True\n") << shm.output;

  // Processes: a and the host find the marker process; b does not.
  const std::string scan = MarkerScan("sbx-pool-", tail);
  int polls = static_cast<int>(100 * WallClockScale());  // of 50 ms each: until the sleep runs
  while (Python(*a, scan).stdout_text != "processes 1\n" && --polls > 0)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(Python(*a, scan).stdout_text, "processes 1\n") << "a never saw its own marker";
  EXPECT_EQ(sbx::testing::RunOnHost({"/usr/bin/python3", "-c", scan}).output, "processes 1\n");
  EXPECT_EQ(Python(*b, scan).stdout_text, "processes 0\n");
  // b is pid 1 of its own pid namespace.
  EXPECT_EQ(Python(*b, "import os\nos.getpid()").value.value_or(""), "1");

  // Namespaces: each of a's differs from b's; the SysV segment is in a's IPC namespace only.
  const auto seen_a = Lines(Python(*a, kNamespacesAndIpc).stdout_text);
  const auto seen_b = Lines(Python(*b, kNamespacesAndIpc).stdout_text);
  ASSERT_EQ(seen_a.size(), 2u);
  ASSERT_EQ(seen_b.size(), 2u);
  std::istringstream links_a(seen_a[0]), links_b(seen_b[0]);
  std::string link_a, link_b;
  int compared = 0;
  while (links_a >> link_a && links_b >> link_b) {
    EXPECT_NE(link_a, link_b) << "a and b share a namespace";
    ++compared;
  }
  EXPECT_EQ(compared, 5) << seen_a[0] << " / " << seen_b[0];
  EXPECT_EQ(seen_a[1], "shm keys [" + std::to_string(kShmKey) + "]");
  EXPECT_EQ(seen_b[1], "shm keys []");

  // Files: none of a's, anywhere b can write (a finds its three, and its own cell's source).
  EXPECT_EQ(Python(*a, kFileScan).stdout_text,
            "files ['/workspace/a.txt', '/tmp/a-tmp', '/dev/shm/a-shm']\nsecrets 4\n");
  EXPECT_EQ(Python(*b, kFileScan).stdout_text, "files []\nsecrets 0\n");
}

TEST(SessionPool, PooledSessionIsIsolatedAndGetsNoHostSecrets) {
  auto pool = NewPool();
  ASSERT_TRUE(pool);
  auto session = Acquire(*pool);
  ASSERT_TRUE(session);
  sbx::testing::ExpectIsolatedWithoutHostSecrets(*session);
}

TEST(SessionPool, SeccompFilterIsOnInPooledSessions) {
  auto pool = NewPool();
  ASSERT_TRUE(pool);
  auto session = Acquire(*pool);
  ASSERT_TRUE(session);
  sbx::testing::ExpectSeccompFilterActive(*session);
}

TEST(SessionPool, OutOfMemoryIsReportedAndTheSessionIsReplaced) {
  PoolOptions options = Options(1);
  options.policy = testing::Changed(options.policy, [](Policy& p) { p.limits.memory_bytes = 384ull << 20; });
  auto pool = NewPool(std::move(options));
  ASSERT_TRUE(pool);
  auto session = Acquire(*pool);
  ASSERT_TRUE(session);
  Python(*session, "open('kept.txt', 'w').write('kept')");
  CodeResult r = Python(*session, "chunks = []\nfor _ in range(64): chunks.append(bytearray(64 << 20))");
  EXPECT_EQ(r.status, RunStatus::kOomKilled) << RunStatusName(r.status) << " " << r.notice;
  EXPECT_TRUE(r.state_lost);
  CodeResult next = Python(*session, "print(open('kept.txt').read())");
  EXPECT_EQ(next.stdout_text, "kept\n") << next.output;
  EXPECT_NE(next.notice.find("oom_killed"), std::string::npos) << next.notice;
}

TEST(SessionPool, TwoHundredSessionsLeaveNothingBehind) {
  auto state = StateDirectory();
  ASSERT_TRUE(state);
  const size_t workspaces_before = EntriesWithPrefix(*state, "ws-").size();
  const size_t mounts_before = HostMountCount();
  {
    auto pool = NewPool(Options(4));
    ASSERT_TRUE(pool);
    for (int i = 0; i < 200; ++i) {
      auto session = Acquire(*pool);
      ASSERT_TRUE(session);
      if (i % 20 == 0) {
        EXPECT_EQ(Python(*session, "1 + 1").value.value_or(""), "2");
      }
    }
    // Every closed session's workspace is gone once the reaper is done; only the warm ones' remain.
    EXPECT_TRUE(pool->WaitForRetired(30 * WallClockScale()));
    EXPECT_LE(EntriesWithPrefix(pool->workspaces_root(), "s-").size(), 4u);
  }
  EXPECT_TRUE(HostProcessesWith("zygote.py").empty());
  EXPECT_TRUE(CgroupsOf(::getpid()).empty());
  EXPECT_EQ(EntriesWithPrefix(*state, "ws-").size(), workspaces_before);
  EXPECT_EQ(HostMountCount(), mounts_before);
}

TEST(SessionPool, KillingThePoolOwnerKillsEverything) {
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  pid_t owner = ::fork();
  if (owner == 0) {
    ::close(ready[0]);
    auto pool = SessionPool::Create(Options(2));
    if (!pool) ::_exit(1);
    auto session = (*pool)->Acquire();
    if (!session) ::_exit(2);
    auto r = (*session)->Execute({{"bash", "(exec -a pool-owner-marker sleep 1005 &); echo started"}});
    if (!r || r->output.find("started") == std::string::npos) ::_exit(3);
    (void)!::write(ready[1], "r", 1);
    ::pause();
    ::_exit(0);
  }
  ::close(ready[1]);
  char byte = 0;
  if (::read(ready[0], &byte, 1) != 1) {
    ::kill(owner, SIGKILL);
    ::waitpid(owner, nullptr, 0);
    FAIL() << "the pool owner did not start";
  }
  ::close(ready[0]);
  const int polls = static_cast<int>(100 * WallClockScale());  // of 50 ms each
  for (int i = 0; i < polls && HostProcessesWith("pool-owner-marker").empty(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const bool marker_seen = !HostProcessesWith("pool-owner-marker").empty();
  const bool zygote_seen = !HostProcessesWith("zygote.py").empty();
  ::kill(owner, SIGKILL);
  ::waitpid(owner, nullptr, 0);
  EXPECT_TRUE(marker_seen) << "the session's background process never showed up";
  EXPECT_TRUE(zygote_seen);
  for (int i = 0; i < polls && !(HostProcessesWith("pool-owner-marker").empty() &&
                                 HostProcessesWith("zygote.py").empty()); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_TRUE(HostProcessesWith("pool-owner-marker").empty());
  EXPECT_TRUE(HostProcessesWith("zygote.py").empty());
}

}  // namespace
}  // namespace sbx::executor
