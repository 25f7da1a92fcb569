// Requests to and replies from the session driver, as JSON; nlohmann exceptions stop here.
#include "src/executor/session_protocol.h"

#include <algorithm>
#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "sandbox/fs/fs_beneath.h"

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
  SBX_ASSIGN_OR_RETURN(auto member, Member(object, key, IsString, "a string"));
  return member->get<std::string>();
}

Result<bool> BoolMember(const json& object, const char* key) {
  SBX_ASSIGN_OR_RETURN(auto member, Member(object, key, IsBool, "true or false"));
  return member->get<bool>();
}

constexpr size_t kMaxReprBytes = 64 << 10;  // session_driver.py's MAX_REPR

// `figures_dir`/cell-<id>-<digits>.png, the only names the driver gives figures.
bool IsFigurePath(const std::string& path, const std::string& figures_dir, int id) {
  const std::string prefix = figures_dir + "/cell-" + std::to_string(id) + "-";
  constexpr std::string_view kSuffix = ".png";
  if (path.size() <= prefix.size() + kSuffix.size() || path.rfind(prefix, 0) != 0 ||
      !path.ends_with(kSuffix)) {
    return false;
  }
  const std::string_view number(path.data() + prefix.size(), path.size() - prefix.size() - kSuffix.size());
  return number.size() <= 9 &&
         std::all_of(number.begin(), number.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Builds a reply's DOM in the same pass that bounds its shape: the walk stops where a reply
// nests deeper or holds more values than a driver's reply can, before more of it is built. One
// pass, not a check and then a parse: lexing a reply of a MiB of output takes tens of ms. The
// DOM builder is nlohmann's own, the one json::parse uses.
class BoundedReplyParser {
 public:
  explicit BoundedReplyParser(json& out) : dom_(out, /*allow_exceptions=*/false) {}
  bool null() { return Value() && dom_.null(); }
  bool boolean(bool value) { return Value() && dom_.boolean(value); }
  bool number_integer(json::number_integer_t value) { return Value() && dom_.number_integer(value); }
  bool number_unsigned(json::number_unsigned_t value) { return Value() && dom_.number_unsigned(value); }
  bool number_float(json::number_float_t value, const json::string_t& text) {
    return Value() && dom_.number_float(value, text);
  }
  bool string(json::string_t& value) { return Value() && dom_.string(value); }
  bool binary(json::binary_t& value) { return Value() && dom_.binary(value); }
  bool key(json::string_t& value) { return Value() && dom_.key(value); }
  bool start_object(std::size_t size) { return Open() && dom_.start_object(size); }
  bool start_array(std::size_t size) { return Open() && dom_.start_array(size); }
  bool end_object() { return Close() && dom_.end_object(); }
  bool end_array() { return Close() && dom_.end_array(); }
  bool parse_error(std::size_t position, const std::string& token, const nlohmann::detail::exception& e) {
    why = "not valid JSON";
    return dom_.parse_error(position, token, e);
  }
  std::string why;

 private:
  bool Value() {
    if (++values_ <= kMaxReplyValues) return true;
    why = "more than " + std::to_string(kMaxReplyValues) + " JSON values";
    return false;
  }
  bool Open() {
    if (++depth_ > kMaxReplyDepth) {
      why = "nested deeper than " + std::to_string(kMaxReplyDepth) + " levels";
      return false;
    }
    return Value();
  }
  bool Close() {
    --depth_;
    return true;
  }
  nlohmann::detail::json_sax_dom_parser<json> dom_;
  int depth_ = 0;
  size_t values_ = 0;
};

Result<void> FillFromReply(const json& reply, int expected_id, const std::string& figures_dir,
                           CodeResult& result) {
  if (!reply.is_object()) return BadReply("not a JSON object");
  SBX_ASSIGN_OR_RETURN(auto id, Member(reply, "id", IsInteger, "an integer"));
  if (id->get<int64_t>() != expected_id) {
    return BadReply("answers request " + id->dump() + ", expected " + std::to_string(expected_id));
  }
  SBX_ASSIGN_OR_RETURN(auto outcome, StringMember(reply, "outcome"));
  if (outcome != "ok" && outcome != "error" && outcome != "timeout") {
    // Quoted for people and models, so escaped and cut (at a UTF-8 character's start, the
    // message may go into JSON): the driver's process runs the code.
    size_t shown = std::min<size_t>(outcome.size(), 32);
    while (shown < outcome.size() && (static_cast<unsigned char>(outcome[shown]) & 0xc0) == 0x80)
      --shown;
    return BadReply("unknown outcome \"" + EscapeForMessage(outcome.substr(0, shown)) + "\"");
  }
  auto exit_code = Member(reply, "exit_code", IsInteger, "an integer");
  if (!exit_code) return exit_code.error();
  int64_t code = (*exit_code)->get<int64_t>();
  if (code < 0 || code > 255) return BadReply("exit_code " + std::to_string(code) + " is out of 0..255");
  result.exit_code = static_cast<int>(code);
  result.status = outcome == "timeout" ? RunStatus::kTimedOut : RunStatus::kExited;

  for (auto [key, text] : {std::pair{"stdout", &result.stdout_text}, {"stderr", &result.stderr_text}}) {
    SBX_ASSIGN_OR_RETURN(auto value, Member(reply, key, IsString, "a string"));
    *text += value->get_ref<const std::string&>();
  }
  for (auto [key, flag] : {std::pair{"stdout_truncated", &result.stdout_truncated},
                           {"stderr_truncated", &result.stderr_truncated},
                           {"output_truncated", &result.output_truncated}}) {
    SBX_ASSIGN_OR_RETURN(auto value, BoolMember(reply, key));
    *flag = *flag || value;
  }
  // The output in order: a stream's name when all of it is that stream's text above (the
  // driver then spares sending it twice), else the chunks as they came.
  SBX_ASSIGN_OR_RETURN(auto output, Member(
                                        reply, "output", [](const json& j) { return j.is_array() || j.is_string(); },
                                        "an array or a stream's name"));
  if (output->is_string()) {
    const std::string& stream = output->get_ref<const std::string&>();
    if (stream != "stdout" && stream != "stderr") return BadReply("\"output\" names no stream");
    result.output += reply[stream].get_ref<const std::string&>();
  } else {
    for (const json& chunk : *output) {
      if (!chunk.is_array() || chunk.size() != 2 || !chunk[0].is_string() || !chunk[1].is_string() ||
          (chunk[0] != "stdout" && chunk[0] != "stderr")) {
        return BadReply("an \"output\" entry is not [\"stdout\"|\"stderr\", text]");
      }
      result.output += chunk[1].get_ref<const std::string&>();
    }
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
      SBX_ASSIGN_OR_RETURN(auto text, StringMember(*error, key));
      *field = text;
    }
    result.error = std::move(parsed);
  }
  SBX_ASSIGN_OR_RETURN(
      auto figures, Member(
                        reply, "figures", [](const json& j) { return j.is_array(); }, "an array"));
  if (figures->size() > kMaxReplyFigures) {
    return BadReply("more than " + std::to_string(kMaxReplyFigures) + " figures");
  }
  for (const json& figure : *figures) {
    if (!figure.is_string() || !IsFigurePath(figure.get<std::string>(), figures_dir, expected_id)) {
      return BadReply("a figure path is not " + figures_dir + "/cell-" + std::to_string(expected_id) +
                      "-<n>.png");
    }
    result.images.push_back(figure.get<std::string>());
  }
  SBX_ASSIGN_OR_RETURN(auto cpu,
                       Member(
                           reply, "cpu_ms", [](const json& j) { return j.is_number_unsigned(); },
                           "a non-negative integer"));
  result.cpu_ms += cpu->get<uint64_t>();
  return {};
}

}  // namespace

std::string ExecRequestJson(const ExecRequest& request) {
  json out = {{"op", "exec"},
              {"id", request.id},
              {"language", request.language},
              {"timeout_seconds", request.timeout_seconds},
              {"output_bytes", request.output_bytes},
              {"figures_dir", request.figures_dir},
              {"stream", request.stream}};
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

size_t MaxReplyBytes(uint64_t output_bytes) {
  const uint64_t text = 4 * output_bytes + 3 * kMaxReprBytes;
  return static_cast<size_t>(std::min<uint64_t>(6 * text + (1 << 20), UINT32_MAX));
}

// The frame as a DOM, within a reply's bounds.
Result<json> ParseBounded(const std::string& text) {
  json parsed;
  BoundedReplyParser parser(parsed);
  if (!json::sax_parse(text, &parser)) return BadReply(parser.why.empty() ? "not valid JSON" : parser.why);
  return parsed;
}

Result<void> ParseExecReply(const std::string& text, int expected_id, const std::string& figures_dir,
                            CodeResult& result) {
  SBX_ASSIGN_OR_RETURN(auto parsed, ParseBounded(text));
  try {
    return FillFromReply(parsed, expected_id, figures_dir, result);
  } catch (const json::exception& e) {
    return BadReply(e.what());
  }
}

Result<bool> ParseStreamingFrame(const std::string& text, int expected_id, const std::string& figures_dir,
                                 OutputChunk& chunk, CodeResult& result) {
  SBX_ASSIGN_OR_RETURN(auto parsed, ParseBounded(text));
  try {
    if (!parsed.is_object() || !parsed.contains("op")) {
      if (auto filled = FillFromReply(parsed, expected_id, figures_dir, result); !filled) {
        return filled.error();
      }
      return true;
    }
    const json& frame = parsed;
    if (frame["op"] != "output") return BadReply("\"op\" of a frame during a block is not \"output\"");
    if (frame.size() != 4) return BadReply("an output frame must hold exactly op, id, stream and text");
    SBX_ASSIGN_OR_RETURN(auto id, Member(frame, "id", IsInteger, "an integer"));
    if (id->get<int64_t>() != expected_id) {
      return BadReply("output for request " + id->dump() + ", expected " + std::to_string(expected_id));
    }
    auto stream = StringMember(frame, "stream");
    if (!stream) return stream.error();
    if (*stream != "stdout" && *stream != "stderr") {
      return BadReply("an output frame's \"stream\" is not \"stdout\" or \"stderr\"");
    }
    SBX_ASSIGN_OR_RETURN(auto output, StringMember(frame, "text"));
    chunk.stream = *stream == "stderr" ? OutputChunk::Stream::kStderr : OutputChunk::Stream::kStdout;
    chunk.text = std::move(output);
    return false;
  } catch (const json::exception& e) {
    return BadReply(e.what());
  }
}

}  // namespace sbx::executor
