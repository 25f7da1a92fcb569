// SessionRegistry, ServerSession and FifoMutex.
#include "src/server/session_registry.h"

#include <sys/random.h>

#include <cerrno>
#include <chrono>
#include <cstdio>

namespace sbx::server {
namespace {

constexpr double kReapPeriodSeconds = 1.0;

std::string NewSessionId(const std::string& prefix) {
  unsigned char bytes[12];
  size_t filled = 0;
  while (filled < sizeof(bytes)) {
    ssize_t n = ::getrandom(bytes + filled, sizeof(bytes) - filled, 0);
    if (n > 0) filled += static_cast<size_t>(n);
  }
  std::string id = prefix.empty() ? "s-" : prefix + "_s-";
  char hex[3];
  for (unsigned char byte : bytes) {
    std::snprintf(hex, sizeof(hex), "%02x", byte);
    id += hex;
  }
  return id;
}

}  // namespace

Result<void> ValidateSessionPrefix(const std::string& prefix, const std::string& source) {
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  bool valid = !prefix.empty() && prefix.size() <= 63 && alnum(prefix.front()) && alnum(prefix.back());
  for (char c : prefix) valid = valid && (alnum(c) || c == '-' || c == '.');
  if (valid) return Ok{};
  return InvalidInput(source + " '" + prefix +
                      "': use 1-63 of a-z, 0-9, '-' and '.', starting and ending with a letter or "
                      "digit (a pod's name: SBX_SESSION_PREFIX from the field metadata.name)");
}

double NowSeconds() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

void FifoMutex::lock() {
  std::unique_lock lock(mutex_);
  const uint64_t ticket = next_ticket_++;
  turn_.wait(lock, [&] { return serving_ == ticket; });
}

void FifoMutex::unlock() {
  {
    std::lock_guard lock(mutex_);
    ++serving_;
  }
  turn_.notify_all();
}

ServerSession::ServerSession(std::string id, std::unique_ptr<executor::SessionExecutor> executor,
                             bool pooled, double idle_timeout_seconds, std::string network,
                             double timeout_seconds, std::string image)
    : id(std::move(id)),
      created(NowSeconds()),
      pooled(pooled),
      idle_timeout_seconds(idle_timeout_seconds),
      network(std::move(network)),
      timeout_seconds(timeout_seconds),
      image(std::move(image)),
      executor_(std::move(executor)),
      last_used_(created) {}

void ServerSession::BeginRequest() {
  std::lock_guard lock(mutex_);
  ++active_requests_;
}

void ServerSession::EndRequest(bool counted_execution) {
  std::lock_guard lock(mutex_);
  --active_requests_;
  last_used_ = NowSeconds();
  if (counted_execution) ++executions_;
}

bool ServerSession::busy() const { return requests() > 0; }

int ServerSession::requests() const {
  std::lock_guard lock(mutex_);
  return active_requests_;
}

double ServerSession::last_used() const {
  std::lock_guard lock(mutex_);
  return last_used_;
}

uint64_t ServerSession::executions() const {
  std::lock_guard lock(mutex_);
  return executions_;
}

void ServerSession::End() {
  // The running execution and those of the requests queued ahead of this one (they run nothing).
  if (auto* running = executor_.get()) running->CancelFromNowOn();
  std::lock_guard turn(turn_);
  if (!executor_) return;
  executor_->Close();
  // A pooled executor's destructor hands its cgroup and workspace to the pool's reaper; a cold
  // one removes its temporary workspace here.
  executor_.reset();
}

SessionRegistry::SessionRegistry(RegistryOptions options)
    : options_(std::move(options)), reaper_([this] { ReapLoop(); }) {}

SessionRegistry::~SessionRegistry() { EndAll(); }

Result<std::shared_ptr<ServerSession>> SessionRegistry::Create(SessionRequest request) {
  {
    std::lock_guard lock(mutex_);
    if (closed_) return MakeError(ErrorCode::kSetupFailed, "the server is shutting down");
    if (sessions_.size() + reserved_ >= options_.max_sessions) {
      // EAGAIN: full for now, unlike a session that cannot start at all (the API's 429).
      return Error{ErrorCode::kUnavailable, EAGAIN,
                   "the server holds its maximum of " + std::to_string(options_.max_sessions) +
                       " sessions (--max-sessions); end one (DELETE /v1/sessions/{id}) or retry"};
    }
    ++reserved_;
  }
  const bool pooled = options_.pool != nullptr && request.server_policy && request.image_dir.empty() &&
                      request.policy->network == NetworkMode::kNone;
  auto made = [&]() -> Result<std::unique_ptr<executor::SessionExecutor>> {
    if (pooled) {
      executor::PooledSessionOptions pooled_options;
      pooled_options.manifest = std::move(request.manifest);
      pooled_options.timeout_seconds = request.policy->limits.timeout_seconds;
      pooled_options.stream_idle_seconds = options_.keepalive_seconds;
      SBX_ASSIGN_OR_RETURN(auto acquired, options_.pool->Acquire(std::move(pooled_options)));
      return std::unique_ptr<executor::SessionExecutor>(std::move(acquired));
    }
    executor::ExecutorOptions executor_options;
    executor_options.policy = request.policy;
    executor_options.image_dir = request.image_dir.empty() ? options_.image_dir : request.image_dir;
    executor_options.manifest = std::move(request.manifest);
    executor_options.session_idle_seconds = request.idle_timeout_seconds;
    executor_options.stream_idle_seconds = options_.keepalive_seconds;
    executor_options.outer_session_driver = options_.outer_session_driver;
    return executor::SessionExecutor::Create(std::move(executor_options));
  }();
  std::lock_guard lock(mutex_);
  --reserved_;
  if (!made) return made.error();
  auto session = std::make_shared<ServerSession>(NewSessionId(options_.session_prefix), std::move(*made), pooled,
                                                 request.idle_timeout_seconds,
                                                 NetworkModeName(request.policy->network),
                                                 request.policy->limits.timeout_seconds,
                                                 request.policy->image);
  sessions_.emplace(session->id, session);
  return session;
}

std::shared_ptr<ServerSession> SessionRegistry::Find(const std::string& id) const {
  std::lock_guard lock(mutex_);
  auto it = sessions_.find(id);
  return it == sessions_.end() ? nullptr : it->second;
}

std::shared_ptr<ServerSession> SessionRegistry::End(const std::string& id) {
  std::shared_ptr<ServerSession> session;
  {
    std::lock_guard lock(mutex_);
    auto it = sessions_.find(id);
    if (it == sessions_.end()) return nullptr;
    session = std::move(it->second);
    sessions_.erase(it);
  }
  session->End();
  return session;
}

std::vector<std::shared_ptr<ServerSession>> SessionRegistry::List() const {
  std::lock_guard lock(mutex_);
  std::vector<std::shared_ptr<ServerSession>> list;
  for (const auto& [id, session] : sessions_) list.push_back(session);
  return list;
}

size_t SessionRegistry::size() const {
  std::lock_guard lock(mutex_);
  return sessions_.size();
}

void SessionRegistry::EndAll() {
  std::map<std::string, std::shared_ptr<ServerSession>> ending;
  {
    std::lock_guard lock(mutex_);
    closed_ = true;
    ending.swap(sessions_);
  }
  stop_reaper_.notify_all();
  if (reaper_.joinable()) reaper_.join();
  for (auto& [id, session] : ending) session->End();
}

void SessionRegistry::ReapLoop() {
  std::unique_lock lock(mutex_);
  while (!closed_) {
    stop_reaper_.wait_for(lock, std::chrono::duration<double>(kReapPeriodSeconds));
    if (closed_) return;
    std::vector<std::shared_ptr<ServerSession>> idle;
    const double now = NowSeconds();
    for (auto it = sessions_.begin(); it != sessions_.end();) {
      const ServerSession& session = *it->second;
      if (!session.busy() && now - session.last_used() > session.idle_timeout_seconds) {
        idle.push_back(std::move(it->second));
        it = sessions_.erase(it);
      } else {
        ++it;
      }
    }
    lock.unlock();
    for (auto& session : idle) session->End();
    lock.lock();
  }
}

}  // namespace sbx::server
