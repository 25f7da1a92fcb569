// SessionPool: the zygote, the warm sessions a background thread keeps ready, and the executors.
#include "src/executor/session_pool.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "base/remove_tree.h"
#include "sandbox/image/image.h"
#include "sandbox/isolation/userns.h"
#include "src/executor/session_reaper.h"
#include "src/executor/zygote.h"

namespace sbx::executor {

const char* const kDefaultZygoteWarmup =
    "import io\n"
    "import numpy as np\n"
    "import pandas as pd\n"
    "import matplotlib.pyplot as plt\n"
    "df = pd.DataFrame({'a': range(1000), 'b': np.arange(1000) % 7})\n"
    "df.describe(); df.groupby('b').a.mean(); repr(df.head())\n"
    "fig = plt.figure(); plt.plot([1, 2, 3]); fig.savefig(io.BytesIO(), format='png')\n"
    "plt.close('all')\n";

const char* const kDefaultPrefaultCode =
    "import numpy as np\n"
    "import pandas as pd\n"
    "df = pd.DataFrame({'a': range(1000), 'b': np.arange(1000) % 7})\n"
    "df.describe(); df.groupby('b').a.mean(); repr(df.head())\n";

namespace {

struct WarmSession {
  Workspace workspace;
  std::string name;
  std::unique_ptr<PooledDriver> driver;
};

// Spawns in flight at once. A spawn mostly waits (the zygote's fork, the session's mounts and,
// on cgroup v1, an RCU grace period to move it into its cgroup): one at a time, the refill fell
// behind a loop that drops sessions as fast as it takes them.
constexpr size_t kMaxConcurrentSpawns = 4;

bool Ended(const DriverProcess& driver) {
  struct pollfd pfd = {driver.ended_fd(), POLLIN, 0};
  return ::poll(&pfd, 1, 0) == 1;
}

}  // namespace

struct PoolCore {
  PoolOptions options;
  std::string image_dir;
  FileOwner owner;
  Workspace root;
  std::unique_ptr<Zygote> zygote;
  std::atomic<unsigned> next_name{0};

  mutable std::mutex mutex;
  mutable std::condition_variable changed;
  std::deque<WarmSession> warm;
  size_t spawning = 0;   // refill spawns in flight
  size_t executing = 0;  // Execute calls of pooled sessions in flight
  bool stopping = false;
  std::string last_error;
  std::vector<std::thread> refill;
  SessionReaper reaper;

  ~PoolCore() {
    Shutdown();
    if (!root.path.empty()) (void)RemoveTree(root.path);
  }

  // A fresh directory directly under the root, owned by the sandbox user.
  Result<Workspace> NewWorkspace(std::string* name) {
    *name = "s-" + std::to_string(next_name++);
    if (::mkdirat(root.fd.get(), name->c_str(), 0700) != 0)
      return SysError(ErrorCode::kIo, "mkdir(" + root.path + "/" + *name + ")");
    Workspace workspace;
    workspace.path = root.path + "/" + *name;
    workspace.temporary = true;
    if (::fchownat(root.fd.get(), name->c_str(), owner.uid, owner.gid, AT_SYMLINK_NOFOLLOW) != 0) {
      (void)RemoveTree(workspace.path);
      return SysError(ErrorCode::kIo, "chown(" + workspace.path + ")");
    }
    workspace.fd.reset(::openat(root.fd.get(), name->c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!workspace.fd) {
      (void)RemoveTree(workspace.path);
      return SysError(ErrorCode::kIo, "open(" + workspace.path + ")");
    }
    return workspace;
  }

  Result<WarmSession> SpawnWarm() {
    WarmSession session;
    auto workspace = NewWorkspace(&session.name);
    if (!workspace) return workspace.error();
    session.workspace = std::move(*workspace);
    auto driver = zygote->Spawn(session.workspace, session.name);
    if (!driver) {
      (void)RemoveTree(session.workspace.path);
      return driver.error();
    }
    session.driver = std::move(*driver);
    return session;
  }

  void RefillLoop() {
    std::unique_lock<std::mutex> lock(mutex);
    while (true) {
      changed.wait(lock, [this] { return stopping || warm.size() + spawning < options.warm_sessions; });
      if (stopping) return;
      // Background work yields to executions (PoolOptions::refill_deferral_seconds) while at
      // least half the warm sessions are ready. Below that the clients take sessions faster
      // than a deferred refill makes them, and an Acquire on an empty pool waits for a whole
      // spawn of its own.
      changed.wait_for(lock, std::chrono::duration<double>(options.refill_deferral_seconds),
                       [this] { return stopping || executing == 0 || warm.size() < LowWater(); });
      if (stopping) return;
      if (warm.size() + spawning >= options.warm_sessions) continue;  // another thread took it
      ++spawning;
      lock.unlock();
      auto session = SpawnWarm();
      lock.lock();
      --spawning;
      if (session) {
        warm.push_back(std::move(*session));
        changed.notify_all();
        continue;
      }
      last_error = session.error().ToString();
      if (!zygote->alive()) return;
      // A failing spawn is retried, but never in a tight loop.
      changed.wait_for(lock, std::chrono::milliseconds(200), [this] { return stopping; });
    }
  }

  // Sessions still ending hold their places until they are gone: a spawn on a client's behalf
  // (a new session, or the replacement of a lost one) waits for those rather than refuse.
  void WaitForEndingSessionsIfFull() {
    if (zygote->full()) (void)reaper.WaitIdle(options.start_timeout_seconds);
  }

  // Warm sessions below which refills no longer yield to executions: half the target, at
  // least one.
  size_t LowWater() const { return std::max<size_t>(1, (options.warm_sessions + 1) / 2); }

  void Shutdown() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      stopping = true;
    }
    changed.notify_all();
    for (std::thread& thread : refill) thread.join();
    refill.clear();
    reaper.Stop();
    std::deque<WarmSession> left;
    {
      std::lock_guard<std::mutex> lock(mutex);
      left.swap(warm);
    }
    for (WarmSession& session : left) {
      session.driver.reset();
      (void)RemoveTree(session.workspace.path);
    }
    if (zygote) zygote->Stop();
  }

  Result<WarmSession> Take() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (stopping) return MakeError(ErrorCode::kUnavailable, "pool: closed");
      while (!warm.empty()) {
        WarmSession session = std::move(warm.front());
        warm.pop_front();
        changed.notify_all();
        if (!Ended(*session.driver)) {
          ++executing;  // before the refill threads can look: the caller's execution comes next
          return session;
        }
        // Ended while waiting (its idle timeout): discarded.
        session.driver.reset();
        (void)RemoveTree(session.workspace.path);
      }
    }
    if (!zygote->alive()) {
      std::lock_guard<std::mutex> lock(mutex);
      return MakeError(ErrorCode::kUnavailable,
                       "pool: the zygote has ended" + (last_error.empty() ? "" : " (last error: " + last_error + ")"));
    }
    WaitForEndingSessionsIfFull();
    auto session = SpawnWarm();
    if (session) {
      std::lock_guard<std::mutex> lock(mutex);
      ++executing;
    }
    return session;
  }
};

PooledSessionExecutor::PooledSessionExecutor(ExecutorOptions options, std::shared_ptr<PoolCore> core)
    : SessionExecutor(std::move(options)), core_(std::move(core)) {}

PooledSessionExecutor::~PooledSessionExecutor() {
  MarkBusy(false);
  core_->reaper.Retire(RetiredSession{std::move(session_), std::move(first_), std::exchange(workspace_, Workspace{})});
}

void PooledSessionExecutor::MarkBusy(bool busy) {
  if (busy == busy_) return;
  {
    std::lock_guard<std::mutex> lock(core_->mutex);
    busy ? ++core_->executing : --core_->executing;
  }
  busy_ = busy;
  if (!busy) core_->changed.notify_all();
}

void PooledSessionExecutor::Close() {
  SessionExecutor::Close();
  MarkBusy(false);
}

Result<CodeResult> PooledSessionExecutor::ExecuteStreaming(const std::vector<CodeBlock>& blocks,
                                                           const OutputSink& sink,
                                                           CancelToken* cancel) {
  MarkBusy(true);
  auto result = SessionExecutor::ExecuteStreaming(blocks, sink, cancel);
  MarkBusy(false);
  return result;
}

Result<std::unique_ptr<DriverProcess>> PooledSessionExecutor::StartDriver() {
  if (first_) return std::move(first_);
  {
    std::lock_guard<std::mutex> lock(core_->mutex);
    if (core_->stopping) return MakeError(ErrorCode::kUnavailable, "pool: closed; this session cannot be replaced");
  }
  core_->WaitForEndingSessionsIfFull();
  SBX_ASSIGN_OR_RETURN(auto driver, core_->zygote->Spawn(workspace_, workspace_name_));
  host_pid_ = driver->host_pid();
  return std::unique_ptr<DriverProcess>(std::move(driver));
}

Result<std::unique_ptr<SessionPool>> SessionPool::Create(PoolOptions options) {
  if (options.policy->isolation != Isolation::kNamespaces) {
    return InvalidInput("isolation: the warm pool forks every session into fresh namespaces, which "
                        "\"outer\" has none of; start outer sessions cold (--pool 0)");
  }
  if (options.warm_sessions > 64) return InvalidInput("pool: warm_sessions must be at most 64");
  if (options.max_sessions < 1 || options.max_sessions > kMaxPoolSessions ||
      options.max_sessions < options.warm_sessions) {
    return InvalidInput("pool: max_sessions must be " + std::to_string(options.warm_sessions) + ".." +
                        std::to_string(kMaxPoolSessions) + " (at least warm_sessions)");
  }
  if (options.session_idle_seconds < 0) return InvalidInput("pool: session_idle_seconds must be >= 0");
  if (!(options.refill_deferral_seconds >= 0 && options.refill_deferral_seconds <= 60)) {
    return InvalidInput("pool: refill_deferral_seconds must be 0..60 (0 refills at once)");
  }
  if (options.prefault_budget_bytes > kMaxPrefaultBudgetBytes) {
    return InvalidInput("pool: prefault_budget_bytes must be at most " + std::to_string(kMaxPrefaultBudgetBytes) +
                        " (256 MiB); 0 turns the pre-fault off");
  }
  if (options.first_execution_prefault_bytes > kMaxPrefaultBudgetBytes) {
    return InvalidInput("pool: first_execution_prefault_bytes must be at most " +
                        std::to_string(kMaxPrefaultBudgetBytes) + " (256 MiB); 0 leaves those pages to faults");
  }
  auto core = std::make_shared<PoolCore>();
  core->options = options;
  auto image_dir = ResolveImageDir(options.image_dir.empty() ? options.policy->image : options.image_dir);
  if (!image_dir) return image_dir.error();
  core->image_dir = *image_dir;
  SBX_ASSIGN_OR_RETURN(auto mapping, ComputeIdMapping(::geteuid(), ::getegid()));
  core->owner = FileOwner{mapping.host_uid, mapping.host_gid};
  auto root = CreateTemporaryWorkspace(mapping.host_uid, mapping.host_gid);
  if (!root) return root.error();
  core->root = std::move(*root);
  ZygoteOptions zygote_options;
  zygote_options.policy = options.policy;
  zygote_options.image_dir = core->image_dir;
  zygote_options.cgroup_options = options.cgroup_options;
  zygote_options.session_idle_seconds = options.session_idle_seconds;
  zygote_options.start_timeout_seconds = options.start_timeout_seconds;
  zygote_options.warmup_code = options.warmup_code;
  zygote_options.prefault_code = options.prefault_code;
  zygote_options.prefault_budget_bytes = options.prefault_budget_bytes;
  zygote_options.first_execution_prefault_bytes = options.first_execution_prefault_bytes;
  zygote_options.max_sessions = options.max_sessions;
  auto zygote = Zygote::Start(zygote_options, core->root);
  if (!zygote) return zygote.error().Context("pool");
  core->zygote = std::move(*zygote);
  for (size_t i = 0; i < std::min(options.warm_sessions, kMaxConcurrentSpawns); ++i)
    core->refill.emplace_back([raw = core.get()] { raw->RefillLoop(); });
  return std::unique_ptr<SessionPool>(new SessionPool(std::move(core)));
}

SessionPool::~SessionPool() { core_->Shutdown(); }

const std::string& SessionPool::workspaces_root() const { return core_->root.path; }

size_t SessionPool::prefault_pages() const { return core_->zygote->prefault_pages(); }

size_t SessionPool::first_execution_prefault_pages() const {
  return core_->zygote->first_execution_prefault_pages();
}

bool SessionPool::WaitForRetired(double timeout_seconds) const { return core_->reaper.WaitIdle(timeout_seconds); }

size_t SessionPool::WaitForWarm(size_t count, double timeout_seconds) const {
  std::unique_lock<std::mutex> lock(core_->mutex);
  core_->changed.wait_for(lock, std::chrono::duration<double>(timeout_seconds),
                          [this, count] { return core_->stopping || core_->warm.size() >= count; });
  return core_->warm.size();
}

Result<std::unique_ptr<PooledSessionExecutor>> SessionPool::Acquire(PooledSessionOptions options) {
  SBX_TRY(ValidateManifest(options.manifest));
  ExecutorOptions executor_options;
  Policy session_policy = core_->options.policy.get();
  session_policy.limits.timeout_seconds = options.timeout_seconds;  // the caller's: checked here
  SBX_ASSIGN_OR_RETURN(executor_options.policy, ValidPolicy::Check(std::move(session_policy)));
  executor_options.image_dir = core_->image_dir;
  executor_options.grace_seconds = options.grace_seconds;
  executor_options.figures_dir = options.figures_dir;
  executor_options.stream_idle_seconds = options.stream_idle_seconds;
  executor_options.session_idle_seconds = core_->options.session_idle_seconds;
  auto session = core_->Take();
  if (!session) return session.error().Context("pool");
  std::unique_ptr<PooledSessionExecutor> executor(
      new PooledSessionExecutor(std::move(executor_options), core_));
  executor->workspace_ = std::move(session->workspace);
  executor->workspace_name_ = session->name;
  executor->host_pid_ = session->driver->host_pid();
  executor->first_ = std::move(session->driver);
  executor->busy_ = true;  // Take counted it: its first execution is what the caller waits for
  if (!options.manifest.entries().empty()) {
    auto staged = StageManifestAt(executor->workspace_.fd.get(), options.manifest, core_->owner);
    if (!staged) return staged.error().Context("manifest");
  }
  return executor;
}

}  // namespace sbx::executor
