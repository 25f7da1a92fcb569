// Requests to and replies from the session driver, as JSON; nlohmann exceptions stop here.
#include "src/executor/session_protocol.h"

#include <nlohmann/json.hpp>

namespace sbx::executor {
namespace {

using nlohmann::json;

Error BadReply(const std::string& what) {
  return MakeError(ErrorCode::kIo, "session driver reply: " + what + " (the session is treated as lost)");
}

// The member `key` of `object` with the type `check` accepts, or an error naming it.
template <typename Check>
Result<const json*> Member(const json& object, const char* key, Check check, const char* expected) {
  auto it = object.find(key);
  if (it == object.end()) return BadReply(std::string("missing \"") + key + "\"");
  if (!check(*it)) return BadReply(std::string("\"") + key + "\" is not " + expected);
  return &*it;
}

bool IsString(const json& j) { return j.is_string(); }
bool IsBool(const json& j) { return j.is_boolean(); }
bool IsInteger(const json& j) { return j.is_number_integer(); }

Result<std::string> StringMember(const json& object, const char* key) {
  auto member = Member(object, key, IsString, "a string");
  if (!member) return member.error();
  return (*member)->get<std::string>();
}

Result<bool> BoolMember(const json& object, const char* key) {
  auto member = Member(object, key, IsBool, "true or false");
  if (!member) return member.error();
  return (*member)->get<bool>();
}

bool IsFigurePath(const std::string& path, const std::string& figures_dir) {
  if (path.rfind(figures_dir + "/", 0) != 0) return false;
  std::string name = path.substr(figures_dir.size() + 1);
  return !name.empty() && name.find('/') == std::string::npos && name != "." && name != ".." &&
         name.find('\0') == std::string::npos;
}

Result<void> FillFromReply(const json& reply, int expected_id, const std::string& figures_dir,
                           CodeResult& result) {
  if (!reply.is_object()) return BadReply("not a JSON object");
  auto id = Member(reply, "id", IsInteger, "an integer");
  if (!id) return id.error();
  if ((*id)->get<int64_t>() != expected_id) {
    return BadReply("answers request " + (*id)->dump() + ", expected " + std::to_string(expected_id));
  }
  auto outcome = StringMember(reply, "outcome");
  if (!outcome) return outcome.error();
  if (*outcome != "ok" && *outcome != "error" && *outcome != "timeout") {
    return BadReply("unknown outcome \"" + *outcome + "\"");
  }
  auto exit_code = Member(reply, "exit_code", IsInteger, "an integer");
  if (!exit_code) return exit_code.error();
  int64_t code = (*exit_code)->get<int64_t>();
  if (code < 0 || code > 255) return BadReply("exit_code " + std::to_string(code) + " is out of 0..255");
  result.exit_code = static_cast<int>(code);
  result.status = *outcome == "timeout" ? RunStatus::kTimedOut : RunStatus::kExited;

  for (auto [key, text] : {std::pair{"stdout", &result.stdout_text}, {"stderr", &result.stderr_text}}) {
    auto value = StringMember(reply, key);
    if (!value) return value.error();
    *text += *value;
  }
  for (auto [key, flag] : {std::pair{"stdout_truncated", &result.stdout_truncated},
                           {"stderr_truncated", &result.stderr_truncated},
                           {"output_truncated", &result.output_truncated}}) {
    auto value = BoolMember(reply, key);
    if (!value) return value.error();
    *flag = *flag || *value;
  }
  auto output = Member(reply, "output", [](const json& j) { return j.is_array(); }, "an array");
  if (!output) return output.error();
  for (const json& chunk : **output) {
    if (!chunk.is_array() || chunk.size() != 2 || !chunk[0].is_string() || !chunk[1].is_string() ||
        (chunk[0] != "stdout" && chunk[0] != "stderr")) {
      return BadReply("an \"output\" entry is not [\"stdout\"|\"stderr\", text]");
    }
    result.output += chunk[1].get<std::string>();
  }
  auto value = reply.find("result");
  if (value == reply.end() || !(value->is_null() || value->is_string())) {
    return BadReply("\"result\" is not a string or null");
  }
  result.value = value->is_string() ? std::optional<std::string>(value->get<std::string>()) : std::nullopt;
  auto error = reply.find("error");
  if (error == reply.end() || !(error->is_null() || error->is_object())) {
    return BadReply("\"error\" is not an object or null");
  }
  result.error.reset();
  if (error->is_object()) {
    CodeError parsed;
    for (auto [key, field] : {std::pair{"type", &parsed.type}, {"message", &parsed.message},
                              {"traceback", &parsed.traceback}}) {
      auto text = StringMember(*error, key);
      if (!text) return text.error();
      *field = *text;
    }
    result.error = std::move(parsed);
  }
  auto figures = Member(reply, "figures", [](const json& j) { return j.is_array(); }, "an array");
  if (!figures) return figures.error();
  for (const json& figure : **figures) {
    if (!figure.is_string() || !IsFigurePath(figure.get<std::string>(), figures_dir)) {
      return BadReply("a figure path is not a file name under " + figures_dir + "/");
    }
    result.images.push_back(figure.get<std::string>());
  }
  auto cpu = Member(reply, "cpu_ms", [](const json& j) { return j.is_number_unsigned(); },
                    "a non-negative integer");
  if (!cpu) return cpu.error();
  result.cpu_ms += (*cpu)->get<uint64_t>();
  return {};
}

}  // namespace

std::string ExecRequestJson(const ExecRequest& request) {
  json out = {{"op", "exec"},
              {"id", request.id},
              {"language", request.language},
              {"timeout_seconds", request.timeout_seconds},
              {"output_bytes", request.output_bytes},
              {"figures_dir", request.figures_dir}};
  return out.dump();
}

std::string CloseRequestJson() { return json{{"op", "close"}}.dump(); }

Result<void> ParseReady(const std::string& text) {
  json parsed = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_object() || parsed.value("op", json()) != "ready") {
    return BadReply("the first frame is not {\"op\": \"ready\"}");
  }
  return {};
}

Result<void> ParseExecReply(const std::string& text, int expected_id, const std::string& figures_dir,
                            CodeResult& result) {
  json parsed = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) return BadReply("not valid JSON");
  try {
    return FillFromReply(parsed, expected_id, figures_dir, result);
  } catch (const json::exception& e) {
    return BadReply(e.what());
  }
}

}  // namespace sbx::executor
