// The routes of docs/server-api.md: request parsing (strict: unknown fields and wrong types
// are 400s naming the field), the work on sessions, and the JSON answers.
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sandbox/fs/fs_beneath.h"
#include "sandbox/policy/policy.h"
#include "src/executor/session_pool.h"
#include "src/server/http_server.h"
#include "src/server/metrics.h"
#include "src/server/session_registry.h"

namespace sbx::server {

struct ApiOptions {
  ValidPolicy policy;              // the server's: every session's ceiling
  std::string policy_dir;          // named policies (NAME.json) the operator allows; "" none
  std::string image_dir;           // for POST /v1/run; "" the default image
  size_t pool_size = 0;            // warm sessions the pool keeps (0: no pool)
  double session_idle_seconds = 900;  // default and ceiling of a session's idle_timeout
  uint64_t max_file_bytes = 1ull << 30;
  nlohmann::json host;             // what `sbx doctor` found, for /v1/health
};

class Api {
 public:
  Api(ApiOptions options, SessionRegistry& sessions, executor::SessionPool* pool, FileOwner owner);
  HttpResponse Handle(HttpRequest& request);
  // New sessions are refused (503) from now on; health says "draining".
  void StartDraining() { draining_ = true; }
  Metrics& metrics() { return metrics_; }

 private:
  HttpResponse Route(HttpRequest& request);
  HttpResponse Health();
  HttpResponse MetricsText();
  HttpResponse CreateSession(const HttpRequest& request);
  HttpResponse ListSessions();
  HttpResponse RunOnce(const HttpRequest& request);
  HttpResponse SessionRoute(HttpRequest& request, const std::vector<std::string>& parts);
  HttpResponse Execute(ServerSession& session, const HttpRequest& request);
  HttpResponse Exec(ServerSession& session, const HttpRequest& request);
  HttpResponse Files(ServerSession& session, const HttpRequest& request, const std::string& path);
  HttpResponse Workspace(ServerSession& session, const HttpRequest& request);
  // Runs blocks in the session (the caller holds its turn), their output also to `sink` if set;
  // a client that disconnects cancels them. Counts the execution in the metrics.
  executor::CodeResult RunBlocks(ServerSession& session, const HttpRequest& request,
                                 const std::vector<executor::CodeBlock>& blocks, double timeout,
                                 const executor::OutputSink& sink = {});
  // Runs blocks and answers with `result_json` of their result: as one JSON answer, or as
  // NDJSON events (output as it comes, then the result) when the client accepts them.
  HttpResponse Answer(ServerSession& session, const HttpRequest& request,
                      const std::vector<executor::CodeBlock>& blocks, double timeout,
                      const std::function<nlohmann::json(const executor::CodeResult&)>& result_json);
  // The server's policy tightened by a request's inline one; 403 if it would loosen it.
  ValidPolicy Tightened(const nlohmann::json& inline_policy) const;
  // The directory of the variant a session's or run's policy names ("policy.image"; 400 when
  // the cache has no such image); "" when it names none, for the server's image.
  std::string PolicyImageDir(const Policy& policy) const;
  // `policy` checked, as a request changed it; an invalid one fails the request (400).
  ValidPolicy Checked(Policy policy) const;
  // The block timeout a request asks for (at most the session's), or the session's own.
  double BlockTimeout(const nlohmann::json& body, const ServerSession& session) const;

  ApiOptions options_;
  SessionRegistry& sessions_;
  executor::SessionPool* pool_;
  FileOwner owner_;
  Metrics metrics_;
  std::atomic<bool> draining_{false};
};

}  // namespace sbx::server
