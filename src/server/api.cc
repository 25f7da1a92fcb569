// Api: routing and the handlers of each route.
#include "src/server/api.h"

#include <algorithm>
#include <boost/beast/core/detail/base64.hpp>
#include <chrono>
#include <exception>

#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sandbox/cgroup/cgroup.h"
#include "sandbox/image/image.h"
#include "sandbox/launch/run_result.h"
#include "sandbox/launcher.h"
#include "sandbox/policy/policy.h"
#include "src/server/result_json.h"
#include "src/server/session_policy.h"
#include "src/server/workspace_files.h"

namespace sbx::server {
namespace {

using nlohmann::json;

constexpr int kMaxJsonDepth = 32;
constexpr double kMaxIdleSeconds = 7 * 24 * 3600.0;

constexpr const char* kEventsContentType = "application/x-ndjson";

// The client asked for the execution's events as they happen (docs/server-api.md, streaming).
bool WantsEvents(const HttpRequest& request) {
  auto accept = request.headers.find("accept");
  return request.chunked != nullptr && accept != request.headers.end() &&
         accept->second.find(kEventsContentType) != std::string::npos;
}

// Handlers throw ApiError; Handle() turns it into the response.
[[noreturn]] void Fail(ApiError error) { throw error; }

json ParseBody(const HttpRequest& request) {
  if (request.body.empty()) return json::object();
  json body;
  try {
    body = json::parse(request.body, [](int depth, json::parse_event_t, json&) {
      if (depth > kMaxJsonDepth) {
        throw ApiError{400, "invalid", "the JSON body nests deeper than " + std::to_string(kMaxJsonDepth) + " levels"};
      }
      return true;
    });
  } catch (const json::exception& error) {
    Fail(Invalid(std::string("the body is not valid JSON: ") + error.what()));
  }
  if (!body.is_object()) Fail(Invalid("the body must be a JSON object"));
  return body;
}

void OnlyFields(const json& object, std::initializer_list<const char*> known, const std::string& where) {
  for (const auto& [key, value] : object.items()) {
    bool found = false;
    for (const char* name : known) found = found || key == name;
    if (found) continue;
    std::string list;
    for (const char* name : known) list += (list.empty() ? "" : ", ") + std::string(name);
    Fail(Invalid(where + "unknown field \"" + key + "\"; the known fields are: " + list));
  }
}

const json* Field(const json& object, const char* name, json::value_t type, const char* type_name,
                  const std::string& where = "") {
  auto it = object.find(name);
  if (it == object.end() || it->is_null()) return nullptr;
  const bool number_ok = type == json::value_t::number_float && it->is_number();
  if (it->type() != type && !number_ok) {
    Fail(Invalid(where + name + ": must be " + type_name));
  }
  return &*it;
}

double Seconds(const json& object, const char* name, double fallback, double max) {
  const json* value = Field(object, name, json::value_t::number_float, "a number of seconds");
  if (value == nullptr) return fallback;
  double seconds = value->get<double>();
  if (!(seconds >= 0.01 && seconds <= max)) {
    Fail(Invalid(std::string(name) + ": " + value->dump() + " is out of range; use 0.01.." + std::to_string(max)));
  }
  return seconds;
}

std::string Base64Decode(const std::string& text, const std::string& field) {
  namespace base64 = boost::beast::detail::base64;
  // Beast's decoder stops at the first byte outside the alphabet; check the whole text first.
  const size_t padding = text.size() - std::min(text.size(), text.find_last_not_of('=') + 1);
  const bool valid = text.size() % 4 == 0 && padding <= 2 &&
                     text.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/") ==
                         (padding ? text.size() - padding : std::string::npos);
  if (!valid) Fail(Invalid(field + ": not valid base64 (RFC 4648, with padding)"));
  std::string bytes(base64::decoded_size(text.size()), '\0');
  auto [written, read] = base64::decode(bytes.data(), text.data(), text.size());
  bytes.resize(written);
  return bytes;
}

std::string Base64Encode(const std::string& bytes) {
  namespace base64 = boost::beast::detail::base64;
  std::string text(base64::encoded_size(bytes.size()), '\0');
  text.resize(base64::encode(text.data(), bytes.data(), bytes.size()));
  return text;
}

// Percent-decoding of a path segment taken from the target; the result is checked later as a
// relative path (control bytes, "..", absolute paths are refused there).
std::string PercentDecode(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() && std::isxdigit(static_cast<unsigned char>(text[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(text[i + 2]))) {
      out += static_cast<char>(std::stoi(text.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else if (text[i] == '%') {
      Fail(InvalidPath("a '%' in the path not followed by two hex digits"));
    } else {
      out += text[i];
    }
  }
  return out;
}

std::vector<std::string> SplitTarget(const std::string& target) {
  std::string path = target.substr(0, target.find('?'));
  std::vector<std::string> parts;
  size_t start = 1;
  if (path.empty() || path[0] != '/') Fail(NotFound("no route for " + path));
  while (start <= path.size()) {
    size_t slash = path.find('/', start);
    if (slash == std::string::npos) slash = path.size();
    parts.push_back(path.substr(start, slash - start));
    start = slash + 1;
  }
  return parts;
}

HttpResponse JsonResponse(int status, const json& body) {
  return HttpResponse::Json(status, body.dump(-1, ' ', false, json::error_handler_t::replace) + "\n");
}

ApiError MethodNotAllowed(const std::string& method, const std::string& allowed) {
  return {405, "method_not_allowed", method + " is not served here; use " + allowed};
}

ApiError FromFileOutcome(const FileOutcome& outcome) {
  switch (outcome.problem) {
    case FileProblem::kInvalidPath: return InvalidPath(outcome.message);
    case FileProblem::kNotFound: return NotFound(outcome.message);
    case FileProblem::kTooLarge: return ApiError{413, "too_large", outcome.message};
    case FileProblem::kConflict: return Conflict(outcome.message);
    default: return ApiError{500, "internal", outcome.message};
  }
}

// The bytes of a request's "stdin" (text) or "stdin_base64"; empty when it has neither.
std::string StdinBytes(const json& body) {
  const json* text = Field(body, "stdin", json::value_t::string, "a string");
  const json* encoded = Field(body, "stdin_base64", json::value_t::string, "a base64 string");
  if (text != nullptr && encoded != nullptr) Fail(Invalid("give at most one of stdin and stdin_base64"));
  if (text != nullptr) return text->get<std::string>();
  return encoded != nullptr ? Base64Decode(encoded->get<std::string>(), "stdin_base64") : "";
}

// Quotes an argument for sh: inside single quotes every byte is literal but the quote itself.
std::string ShellQuote(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

// A request's "argv": a program and its arguments, each a string without NUL.
std::vector<std::string> Argv(const json& argv) {
  if (argv.empty()) Fail(Invalid("argv: must name a program"));
  std::vector<std::string> strings;
  for (size_t i = 0; i < argv.size(); ++i) {
    const json& arg = argv[i];
    if (!arg.is_string() || arg.get<std::string>().find('\0') != std::string::npos) {
      Fail(Invalid("argv[" + std::to_string(i) + "]: must be a string without NUL"));
    }
    strings.push_back(arg.get<std::string>());
  }
  return strings;
}

// The sh script that runs an exec request in the session: the command, its stdin decoded from
// base64 in a here-document (any bytes, any size, never on a command line).
std::string ExecScript(const json& body) {
  std::string command;
  const json* argv = Field(body, "argv", json::value_t::array, "an array of strings");
  const json* shell = Field(body, "shell", json::value_t::string, "a string");
  if ((argv == nullptr) == (shell == nullptr)) Fail(Invalid("give exactly one of argv and shell"));
  if (argv != nullptr) {
    for (const std::string& arg : Argv(*argv)) command += (command.empty() ? "" : " ") + ShellQuote(arg);
  } else {
    if (shell->get<std::string>().find('\0') != std::string::npos) Fail(Invalid("shell: must not contain NUL"));
    command = "sh -c " + ShellQuote(shell->get<std::string>());
  }
  if (!body.contains("stdin") && !body.contains("stdin_base64")) return "exec " + command + " </dev/null\n";
  std::string encoded = Base64Encode(StdinBytes(body));
  std::string script = "base64 -d <<'SBX_STDIN_END' | " + command + "\n";
  for (size_t i = 0; i < encoded.size(); i += 76) script += encoded.substr(i, 76) + "\n";
  return script + "SBX_STDIN_END\n";
}

Manifest ManifestFromFiles(const json& files) {
  Manifest manifest;
  for (size_t i = 0; i < files.size(); ++i) {
    const std::string where = "files[" + std::to_string(i) + "].";
    const json& file = files[i];
    if (!file.is_object()) Fail(Invalid("files[" + std::to_string(i) + "]: must be an object"));
    OnlyFields(file, {"path", "content", "content_base64", "mode"}, where);
    const json* path = Field(file, "path", json::value_t::string, "a string", where);
    if (path == nullptr) Fail(Invalid(where + "path: required"));
    const json* content = Field(file, "content", json::value_t::string, "a string", where);
    const json* content_base64 = Field(file, "content_base64", json::value_t::string, "a string", where);
    if ((content == nullptr) == (content_base64 == nullptr)) {
      Fail(Invalid(where + "content: give exactly one of content and content_base64"));
    }
    std::string bytes = content != nullptr ? content->get<std::string>()
                                           : Base64Decode(content_base64->get<std::string>(), where + "content_base64");
    bool executable = false;
    if (const json* mode = Field(file, "mode", json::value_t::string, "\"0644\" or \"0755\"", where)) {
      if (*mode != "0644" && *mode != "0755") Fail(Invalid(where + "mode: must be \"0644\" or \"0755\""));
      executable = *mode == "0755";
    }
    manifest.AddBytes(path->get<std::string>(), std::move(bytes), executable);
  }
  if (auto valid = ValidateManifest(manifest); !valid) Fail(InvalidPath(valid.error().message));
  return manifest;
}

// Holds a session for one request: marks it busy (the idle reaper leaves it), waits for its
// turn, and answers 404 if the session ended meanwhile.
class SessionTurn {
 public:
  SessionTurn(ServerSession& session, bool execution) : session_(session), execution_(execution) {
    session_.BeginRequest();
    session_.turn().lock();
    if (session_.ended()) {
      Release();
      Fail(NotFound("session " + session_.id + " has ended"));
    }
  }
  ~SessionTurn() {
    if (!released_) Release();
  }

 private:
  void Release() {
    released_ = true;
    session_.turn().unlock();
    session_.EndRequest(execution_);
  }
  ServerSession& session_;
  bool execution_;
  bool released_ = false;
};

}  // namespace

Api::Api(ApiOptions options, SessionRegistry& sessions, executor::SessionPool* pool, FileOwner owner)
    : options_(std::move(options)), sessions_(sessions), pool_(pool), owner_(owner) {}

HttpResponse Api::Handle(HttpRequest& request) {
  HttpResponse response;
  try {
    response = Route(request);
  } catch (const ApiError& error) {
    response = HttpResponse::FromError(error);
  } catch (const std::exception& error) {
    response = HttpResponse::FromError(ApiError{500, "internal", error.what()});
  }
  metrics_.CountRequest(response.status);
  if (request.chunked != nullptr && request.chunked->started() && response.status != 200) {
    // The 200 went out with the first event: the error is the stream's last event instead.
    response.body = json{{"type", "error"}, {"status", response.status}, {"error", json::parse(response.body)["error"]}}.dump() + "\n";
  }
  return response;
}

HttpResponse Api::Route(HttpRequest& request) {
  const std::vector<std::string> parts = SplitTarget(request.target);
  const std::string& method = request.method;
  if (parts.size() == 1 && parts[0] == "metrics") {
    if (method != "GET") Fail(MethodNotAllowed(method, "GET"));
    return MetricsText();
  }
  if (parts.size() < 2 || parts[0] != "v1") Fail(NotFound("no route for " + request.target + "; see docs/server-api.md"));
  if (parts.size() == 2 && parts[1] == "health") {
    if (method != "GET") Fail(MethodNotAllowed(method, "GET"));
    return Health();
  }
  if (parts.size() == 2 && parts[1] == "run") {
    if (method != "POST") Fail(MethodNotAllowed(method, "POST"));
    return RunOnce(request);
  }
  if (parts[1] != "sessions") Fail(NotFound("no route for " + request.target + "; see docs/server-api.md"));
  if (parts.size() == 2) {
    if (method == "POST") return CreateSession(request);
    if (method == "GET") return ListSessions();
    Fail(MethodNotAllowed(method, "GET or POST"));
  }
  return SessionRoute(request, parts);
}

HttpResponse Api::Health() {
  json pool = {{"size", options_.pool_size}, {"warm", 0}};
  if (pool_ != nullptr) pool["warm"] = pool_->WaitForWarm(0, 0);
  json body = {{"status", draining_ ? "draining" : "ok"},
               {"version", SBX_VERSION},
               {"sessions", {{"active", sessions_.size()}, {"max", sessions_.max_sessions()}}},
               {"pool", pool},
               {"enforcement", options_.host}};
  return JsonResponse(200, body);
}

HttpResponse Api::MetricsText() {
  std::map<std::string, double> gauges = {{"sbx_sessions_active", static_cast<double>(sessions_.size())}};
  if (pool_ != nullptr) gauges["sbx_pool_warm_sessions"] = static_cast<double>(pool_->WaitForWarm(0, 0));
  HttpResponse response = HttpResponse::Json(200, metrics_.Prometheus(gauges));
  response.content_type = "text/plain; version=0.0.4";
  return response;
}

ValidPolicy Api::Tightened(const json& inline_policy) const {
  auto tightened = TightenPolicy(options_.policy.get(), inline_policy.dump());
  if (tightened) return *tightened;
  const Error& error = tightened.error();
  if (error.err_no == EPERM) Fail(PermissionDenied(error.message));
  Fail(Invalid("policy: " + error.message));
}

ValidPolicy Api::Checked(Policy policy) const {
  auto checked = ValidPolicy::Check(std::move(policy));
  if (!checked) Fail(Invalid("policy: " + checked.error().message));
  return *checked;
}

std::string Api::PolicyImageDir(const Policy& policy) const {
  if (policy.image.empty()) return "";
  auto image_dir = ResolveImageDir(policy.image);
  if (!image_dir) Fail(Invalid("policy.image: " + image_dir.error().message));
  return *image_dir;
}

HttpResponse Api::CreateSession(const HttpRequest& request) {
  if (draining_) Fail(Unavailable("the server is shutting down; no new sessions"));
  json body = ParseBody(request);
  OnlyFields(body, {"policy", "policy_name", "files", "env", "idle_timeout"}, "");
  SessionRequest session;
  session.policy = options_.policy;
  const json* inline_policy = Field(body, "policy", json::value_t::object, "a policy object (policies/SCHEMA.md)");
  const json* policy_name = Field(body, "policy_name", json::value_t::string, "a string");
  if (inline_policy != nullptr && policy_name != nullptr) Fail(Invalid("give at most one of policy and policy_name"));
  if (inline_policy != nullptr) {
    session.policy = Tightened(*inline_policy);
    session.server_policy = false;
  }
  if (policy_name != nullptr) {
    const std::string name = policy_name->get<std::string>();
    if (options_.policy_dir.empty()) Fail(NotFound("policy_name: the server has no --policy-dir"));
    if (name.empty() || name.size() > 64 || name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_-") != std::string::npos) {
      Fail(Invalid("policy_name: use lower-case letters, digits, '-' and '_' (at most 64)"));
    }
    auto loaded = LoadPolicyFile(options_.policy_dir + "/" + name + ".json");
    if (!loaded) Fail(NotFound("policy_name \"" + name + "\": " + loaded.error().ToString()));
    session.policy = Checked(*loaded);
    session.server_policy = false;
  }
  if (const json* env = Field(body, "env", json::value_t::object, "an object of strings")) {
    Policy with_env = session.policy.get();
    for (const auto& [name, value] : env->items()) {
      if (!value.is_string()) Fail(Invalid("env." + name + ": must be a string"));
      if (auto valid = ValidateEnvEntry("env", name, value.get<std::string>()); !valid) Fail(Invalid(valid.error().message));
      with_env.env[name] = value.get<std::string>();
      session.server_policy = false;
    }
    session.policy = Checked(std::move(with_env));
  }
  session.image_dir = PolicyImageDir(session.policy.get());
  if (!session.image_dir.empty()) session.server_policy = false;
  if (const json* files = Field(body, "files", json::value_t::array, "an array of {path, content}")) {
    session.manifest = ManifestFromFiles(*files);
  }
  session.idle_timeout_seconds = Seconds(body, "idle_timeout", options_.session_idle_seconds,
                                         std::min(kMaxIdleSeconds, options_.session_idle_seconds));
  auto created = sessions_.Create(std::move(session));
  if (!created) {
    const Error& error = created.error();
    if (error.code == ErrorCode::kUnavailable && error.err_no == EAGAIN) {
      Fail(ApiError{429, "limit", error.message, 1});
    }
    Fail(FromError(error, "create the session"));
  }
  metrics_.CountSessionCreated();
  return JsonResponse(201, SessionJson(**created));
}

HttpResponse Api::ListSessions() {
  json list = json::array();
  for (const auto& session : sessions_.List()) list.push_back(SessionJson(*session));
  return JsonResponse(200, {{"sessions", list}});
}

HttpResponse Api::SessionRoute(HttpRequest& request, const std::vector<std::string>& parts) {
  const std::string& id = parts[2];
  const std::string& method = request.method;
  if (parts.size() == 3 && method == "DELETE") {
    auto ended = sessions_.End(id);
    if (!ended) Fail(NotFound("no session " + id));
    return JsonResponse(200, SessionJson(*ended));
  }
  auto session = sessions_.Find(id);
  if (!session) Fail(NotFound("no session " + id + "; create one with POST /v1/sessions"));
  if (parts.size() == 3) {
    if (method != "GET") Fail(MethodNotAllowed(method, "GET or DELETE"));
    return JsonResponse(200, SessionJson(*session));
  }
  const std::string& action = parts[3];
  const bool known = action == "files" || action == "workspace" || action == "execute" ||
                     action == "exec" || action == "restart";
  if (!known || (action != "files" && parts.size() != 4)) {
    Fail(NotFound("no route for " + request.target + "; see docs/server-api.md"));
  }
  if (action == "files" && parts.size() == 4) Fail(NotFound("files/{path}: name a file in the workspace"));
  if (action == "files") {
    std::string path;
    for (size_t i = 4; i < parts.size(); ++i) path += (i > 4 ? "/" : "") + PercentDecode(parts[i]);
    return Files(*session, request, path);
  }
  if (parts.size() != 4) Fail(NotFound("no route for " + request.target));
  if (action == "workspace") return Workspace(*session, request);
  if (method != "POST") Fail(MethodNotAllowed(method, "POST"));
  if (action == "execute") return Execute(*session, request);
  if (action == "exec") return Exec(*session, request);
  if (action == "restart") {
    ParseBody(request);
    SessionTurn turn(*session, false);
    session->executor().Close();
    return JsonResponse(200, SessionJson(*session));
  }
  Fail(NotFound("no route for " + request.target));
}

double Api::BlockTimeout(const json& body, const ServerSession& session) const {
  return Seconds(body, "timeout", session.timeout_seconds, session.timeout_seconds);
}

HttpResponse Api::Execute(ServerSession& session, const HttpRequest& request) {
  json body = ParseBody(request);
  OnlyFields(body, {"code_blocks", "timeout"}, "");
  const json* blocks = Field(body, "code_blocks", json::value_t::array, "an array of {language, code}");
  if (blocks == nullptr || blocks->empty()) Fail(Invalid("code_blocks: required, at least one block"));
  std::vector<executor::CodeBlock> code_blocks;
  for (size_t i = 0; i < blocks->size(); ++i) {
    const std::string where = "code_blocks[" + std::to_string(i) + "].";
    const json& block = (*blocks)[i];
    if (!block.is_object()) Fail(Invalid("code_blocks[" + std::to_string(i) + "]: must be an object"));
    OnlyFields(block, {"language", "code"}, where);
    const json* language = Field(block, "language", json::value_t::string, "a string", where);
    const json* code = Field(block, "code", json::value_t::string, "a string", where);
    if (language == nullptr || code == nullptr) Fail(Invalid(where + "language and code are required"));
    code_blocks.push_back({language->get<std::string>(), code->get<std::string>()});
  }
  SessionTurn turn(session, true);
  return Answer(session, request, code_blocks, BlockTimeout(body, session), [&session](const auto& result) {
    return CodeResultJson(result, session.executor().workspace_fd());
  });
}

HttpResponse Api::Answer(ServerSession& session, const HttpRequest& request,
                         const std::vector<executor::CodeBlock>& blocks, double timeout,
                         const std::function<json(const executor::CodeResult&)>& result_json) {
  if (!WantsEvents(request)) return JsonResponse(200, result_json(RunBlocks(session, request, blocks, timeout)));
  // NDJSON: an event a line as the blocks write, a keepalive after a silence, the result last.
  ChunkedResponse& events = *request.chunked;
  executor::SessionExecutor& executor = session.executor();
  const executor::OutputSink sink = [&events, &executor](const executor::OutputChunk& chunk) {
    if (events.failed()) return;
    using Stream = executor::OutputChunk::Stream;
    json event = chunk.stream == Stream::kIdle
                     ? json{{"type", "keepalive"}}
                     : json{{"type", chunk.stream == Stream::kStderr ? "stderr" : "stdout"}, {"text", chunk.text}};
    // A client that stops reading is treated as gone: its execution is cancelled.
    if (!events.Write(event.dump() + "\n", kEventsContentType)) executor.Cancel();
  };
  const json final_event = {{"type", "result"}, {"result", result_json(RunBlocks(session, request, blocks, timeout, sink))}};
  if (!events.started()) events.Write({}, kEventsContentType);
  HttpResponse response;
  response.body = final_event.dump() + "\n";
  return response;
}

executor::CodeResult Api::RunBlocks(ServerSession& session, const HttpRequest& request,
                                    const std::vector<executor::CodeBlock>& blocks, double timeout,
                                    const executor::OutputSink& sink) {
  executor::SessionExecutor& executor = session.executor();
  executor.SetBlockTimeout(timeout);
  const auto started = std::chrono::steady_clock::now();
  Result<executor::CodeResult> result = [&] {
    // This request's own token: a client gone before the execution starts still cancels it,
    // and a hang-up after it returned cannot reach the session's next execution.
    executor::CancelToken cancel;
    DisconnectWatch watch(request.connection_fd, [&executor, &cancel] { executor.Cancel(cancel); });
    return executor.ExecuteStreaming(blocks, sink, &cancel);
  }();
  if (!result) Fail(FromError(result.error(), "start the session"));
  metrics_.CountExecution(RunStatusName(result->status),
                          std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  return std::move(*result);
}

HttpResponse Api::Exec(ServerSession& session, const HttpRequest& request) {
  json body = ParseBody(request);
  OnlyFields(body, {"argv", "shell", "stdin", "stdin_base64", "timeout"}, "");
  const std::string script = ExecScript(body);
  SessionTurn turn(session, true);
  return Answer(session, request, {{"sh", script}}, BlockTimeout(body, session), [](const auto& result) {
    return json{{"exit_code", result.exit_code},
                {"status", RunStatusName(result.status)},
                {"stdout", result.stdout_text},
                {"stderr", result.stderr_text},
                {"stdout_truncated", result.stdout_truncated},
                {"stderr_truncated", result.stderr_truncated},
                {"wall_ms", result.wall_ms},
                {"notice", result.notice}};
  });
}

HttpResponse Api::RunOnce(const HttpRequest& request) {
  if (draining_) Fail(Unavailable("the server is shutting down; no new runs"));
  json body = ParseBody(request);
  OnlyFields(body, {"argv", "stdin", "stdin_base64", "policy", "timeout"}, "");
  RunSpec spec;
  ValidPolicy policy = options_.policy;
  if (const json* inline_policy = Field(body, "policy", json::value_t::object, "a policy object")) {
    policy = Tightened(*inline_policy);
  }
  Policy timed = policy.get();
  timed.limits.timeout_seconds = Seconds(body, "timeout", timed.limits.timeout_seconds, timed.limits.timeout_seconds);
  spec.policy = Checked(std::move(timed));
  const json* argv = Field(body, "argv", json::value_t::array, "an array of strings");
  if (argv == nullptr) Fail(Invalid("argv: required, the program and its arguments"));
  spec.argv = Argv(*argv);
  spec.image_dir = PolicyImageDir(spec.policy.get());
  if (spec.image_dir.empty() && spec.policy->isolation == Isolation::kNamespaces) {
    auto image_dir = ResolveImageDir(options_.image_dir);
    if (!image_dir) Fail(FromError(image_dir.error(), "find the image"));
    spec.image_dir = *image_dir;
  }
  // stdin from a memfd: any bytes, and the sandbox reads it at its own pace.
  UniqueFd input;
  std::string stdin_bytes = StdinBytes(body);
  if (!stdin_bytes.empty()) {
    input.reset(::memfd_create("sbx-run-stdin", MFD_CLOEXEC));
    if (!input || ::write(input.get(), stdin_bytes.data(), stdin_bytes.size()) !=
                      static_cast<ssize_t>(stdin_bytes.size()) || ::lseek(input.get(), 0, SEEK_SET) != 0) {
      Fail(ApiError{500, "internal", "could not stage stdin"});
    }
    spec.stdin_fd = input.get();
  }
  UniqueFd cancel(::eventfd(0, EFD_CLOEXEC));
  spec.cancel_fd = cancel.get();
  const auto started = std::chrono::steady_clock::now();
  Result<RunResult> result = [&] {
    DisconnectWatch watch(request.connection_fd, [fd = cancel.get()] {
      uint64_t one = 1;
      if (::write(fd, &one, sizeof(one)) < 0) {
        // An eventfd write fails only on overflow, and then it is readable anyway.
      }
    });
    return RunSandboxed(spec);
  }();
  if (!result) Fail(FromError(result.error(), "run"));
  metrics_.CountExecution(RunStatusName(result->status),
                          std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  return HttpResponse::Json(200, RunResultToJson(*result) + "\n");
}

HttpResponse Api::Files(ServerSession& session, const HttpRequest& request, const std::string& path) {
  if (request.method != "GET" && request.method != "PUT" && request.method != "DELETE") {
    Fail(MethodNotAllowed(request.method, "GET, PUT or DELETE"));
  }
  SessionTurn turn(session, false);
  const int workspace = session.executor().workspace_fd();
  if (request.method == "DELETE") {
    FileOutcome removed = RemoveWorkspaceFile(workspace, path);
    if (removed.problem != FileProblem::kNone) Fail(FromFileOutcome(removed));
    return JsonResponse(200, {{"path", path}, {"removed", true}});
  }
  if (request.method == "GET") {
    HttpResponse response;
    FileOutcome read = ReadWorkspaceFile(workspace, path, options_.max_file_bytes, response.body);
    if (read.problem != FileProblem::kNone) Fail(FromFileOutcome(read));
    response.content_type = "application/octet-stream";
    return response;
  }
  FileOutcome written = WriteWorkspaceFile(workspace, path, request.body, owner_);
  if (written.problem != FileProblem::kNone) Fail(FromFileOutcome(written));
  return JsonResponse(200, {{"path", path}, {"size", request.body.size()}});
}

HttpResponse Api::Workspace(ServerSession& session, const HttpRequest& request) {
  if (request.method != "GET" && request.method != "PUT") Fail(MethodNotAllowed(request.method, "GET or PUT"));
  SessionTurn turn(session, false);
  executor::SessionExecutor& executor = session.executor();
  if (request.method == "GET") {
    // Only once every process of the session is gone is the tree still while it is read.
    executor.Close();
    HttpResponse response;
    FileOutcome persisted = PersistWorkspace(executor.workspace_dir(), response.body);
    if (persisted.problem != FileProblem::kNone) Fail(FromFileOutcome(persisted));
    response.content_type = "application/x-tar";
    return response;
  }
  FileOutcome hydrated = HydrateWorkspace(request.body, executor.workspace_dir(), owner_);
  if (hydrated.problem != FileProblem::kNone) Fail(FromFileOutcome(hydrated));
  return JsonResponse(200, {{"id", session.id}, {"bytes", request.body.size()}});
}

}  // namespace sbx::server
