// The Chat Completions wire form: request bodies out, response bodies in, never an exception.
#include "src/llm/chat_types.h"

#include <string_view>

namespace sbx::llm {
namespace {

using nlohmann::json;

// Deeper than any real response; bounds the parser's work on hostile input.
constexpr int kMaxDepth = 128;
constexpr size_t kMaxShownChars = 60;

// Thrown only from the parser callback below and caught in TryParse.
struct TooDeep {};

// Parses text, or returns nullopt with `problem` saying why in words (no exception prefix).
std::optional<json> TryParse(const std::string& text, std::string& problem) {
  auto limit_depth = [](int depth, json::parse_event_t, json&) {
    if (depth > kMaxDepth) throw TooDeep{};
    return true;
  };
  try {
    return json::parse(text, limit_depth);
  } catch (const TooDeep&) {
    problem = "nested deeper than " + std::to_string(kMaxDepth) + " levels";
  } catch (const json::parse_error& e) {
    std::string_view what = e.what();
    // "[json.exception.parse_error.101] parse error at ..." -> "parse error at ..."
    if (auto end = what.find("] "); what.starts_with("[json.exception.") && end != what.npos)
      what.remove_prefix(end + 2);
    problem = std::string(what);
    if (e.byte > text.size()) problem += "; the text looks truncated";
  } catch (const json::exception& e) {
    problem = e.what();
  }
  return std::nullopt;
}

std::string Describe(const json& value) {
  std::string text = SerializeJson(value);
  if (text.size() > kMaxShownChars) text = text.substr(0, kMaxShownChars) + "...";
  return std::string(value.type_name()) + " " + text;
}

Error ResponseError(const std::string& message) {
  return MakeError(ErrorCode::kIo, "chat response: " + message);
}

Error WrongType(const std::string& path, const std::string& expected, const json& got) {
  return ResponseError(path + ": expected " + expected + ", got " + Describe(got));
}

// The member, or nullptr when it is absent or null (servers use both for "not there").
const json* Member(const json& object, const char* key) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return nullptr;
  return &*it;
}

std::string Join(const std::string& path, const char* key) {
  return path.empty() ? key : path + "." + key;
}

Result<std::string> OptionalString(const json& object, const char* key, const std::string& path) {
  const json* value = Member(object, key);
  if (!value) return std::string();
  if (!value->is_string()) return WrongType(Join(path, key), "a string", *value);
  return value->get<std::string>();
}

Result<int64_t> OptionalCount(const json& object, const char* key, const std::string& path) {
  const json* value = Member(object, key);
  if (!value) return int64_t{0};
  if (!value->is_number_integer() || value->get<int64_t>() < 0)
    return WrongType(Join(path, key), "a token count", *value);
  return value->get<int64_t>();
}

// content is a string, null, or (some servers) a list of {"type":"text","text":...} parts.
Result<std::optional<std::string>> ParseContent(const json& message, const std::string& path) {
  const json* content = Member(message, "content");
  if (!content) return std::optional<std::string>();
  if (content->is_string()) return std::optional<std::string>(content->get<std::string>());
  if (!content->is_array()) return WrongType(path + ".content", "a string or null", *content);
  std::string text;
  for (const json& part : *content) {
    if (part.is_object() && part.value("type", "") == "text" && part.contains("text") &&
        part["text"].is_string())
      text += part["text"].get<std::string>();
  }
  return std::optional<std::string>(text);
}

Result<ToolCall> ParseToolCall(const json& value, size_t index, const std::string& path) {
  if (!value.is_object()) return WrongType(path, "an object", value);
  ToolCall call;
  auto id = OptionalString(value, "id", path);
  if (!id) return id.error();
  // Some local servers omit ids; the result message still needs one to answer.
  call.id = id->empty() ? "call_" + std::to_string(index) : *id;
  const json* function = Member(value, "function");
  if (!function) return ResponseError(path + ": no \"function\"");
  if (!function->is_object()) return WrongType(path + ".function", "an object", *function);
  auto name = OptionalString(*function, "name", path + ".function");
  if (!name) return name.error();
  if (name->empty()) return ResponseError(path + ".function.name: missing or empty");
  call.name = *name;
  const json* arguments = Member(*function, "arguments");
  if (arguments && arguments->is_string()) {
    call.arguments_json = arguments->get<std::string>();
  } else if (arguments && arguments->is_structured()) {
    call.arguments_json = SerializeJson(*arguments);  // already parsed by the server
  } else if (arguments) {
    return WrongType(path + ".function.arguments", "a string", *arguments);
  }
  return call;
}

Result<Message> ParseMessage(const json& value, const std::string& path) {
  if (!value.is_object()) return WrongType(path, "an object", value);
  Message message;
  auto role = OptionalString(value, "role", path);
  if (!role) return role.error();
  message.role = role->empty() ? "assistant" : *role;
  auto content = ParseContent(value, path);
  if (!content) return content.error();
  message.content = std::move(*content);
  auto refusal = OptionalString(value, "refusal", path);
  if (!message.content && refusal && !refusal->empty()) message.content = *refusal;
  const json* tool_calls = Member(value, "tool_calls");
  if (tool_calls && !tool_calls->is_array())
    return WrongType(path + ".tool_calls", "an array", *tool_calls);
  for (size_t i = 0; tool_calls && i < tool_calls->size(); ++i) {
    SBX_ASSIGN_OR_RETURN(auto call, ParseToolCall((*tool_calls)[i], i,
                                                  path + ".tool_calls[" + std::to_string(i) + "]"));
    message.tool_calls.push_back(std::move(call));
  }
  return message;
}

Result<Usage> ParseUsage(const json& root) {
  const json* value = Member(root, "usage");
  if (!value) return Usage{};
  if (!value->is_object()) return WrongType("usage", "an object", *value);
  SBX_ASSIGN_OR_RETURN(auto prompt, OptionalCount(*value, "prompt_tokens", "usage"));
  SBX_ASSIGN_OR_RETURN(auto completion, OptionalCount(*value, "completion_tokens", "usage"));
  SBX_ASSIGN_OR_RETURN(auto total, OptionalCount(*value, "total_tokens", "usage"));
  return Usage{prompt, completion, total ? total : prompt + completion};
}

std::optional<std::string> ErrorMessageOf(const json& root) {
  if (!root.is_object()) return std::nullopt;
  if (const json* error = Member(root, "error")) {
    if (error->is_string()) return error->get<std::string>();  // Ollama
    if (error->is_object() && error->contains("message") && (*error)["message"].is_string())
      return (*error)["message"].get<std::string>();  // OpenAI, LiteLLM, llama.cpp
    return Describe(*error);
  }
  for (const char* key : {"message", "detail"}) {  // vLLM, FastAPI
    if (const json* text = Member(root, key); text && text->is_string())
      return text->get<std::string>();
  }
  return std::nullopt;
}

}  // namespace

Usage& Usage::operator+=(const Usage& other) {
  prompt_tokens += other.prompt_tokens;
  completion_tokens += other.completion_tokens;
  total_tokens += other.total_tokens;
  return *this;
}

std::string SerializeJson(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

json MessageToJson(const Message& message) {
  json out = {{"role", message.role}};
  out["content"] = message.content ? json(*message.content) : json(nullptr);
  if (!message.name.empty()) out["name"] = message.name;
  if (!message.tool_call_id.empty()) out["tool_call_id"] = message.tool_call_id;
  if (!message.tool_calls.empty()) {
    json calls = json::array();
    for (const ToolCall& call : message.tool_calls) {
      calls.push_back({{"id", call.id},
                       {"type", "function"},
                       {"function", {{"name", call.name}, {"arguments", call.arguments_json}}}});
    }
    out["tool_calls"] = std::move(calls);
  }
  return out;
}

json ChatRequestToJson(const ChatRequest& request) {
  json body = {{"model", request.model}, {"messages", json::array()}};
  for (const Message& message : request.messages)
    body["messages"].push_back(MessageToJson(message));
  if (!request.tools.empty()) {
    json tools = json::array();
    for (const ToolSpec& tool : request.tools) {
      tools.push_back({{"type", "function"},
                       {"function",
                        {{"name", tool.name},
                         {"description", tool.description},
                         {"parameters", tool.parameters}}}});
    }
    body["tools"] = std::move(tools);
  }
  if (request.temperature) body["temperature"] = *request.temperature;
  if (request.max_tokens) body["max_tokens"] = *request.max_tokens;
  return body;
}

std::optional<std::string> ParseServerErrorMessage(const std::string& body) {
  std::string problem;
  auto root = TryParse(body, problem);
  return root ? ErrorMessageOf(*root) : std::nullopt;
}

Result<ChatResponse> ParseChatResponse(const std::string& body) {
  if (body.empty()) return ResponseError("the body is empty");
  std::string problem;
  auto root = TryParse(body, problem);
  if (!root) {
    return ResponseError("not valid JSON (" + problem + "; " + std::to_string(body.size()) +
                         " bytes received)");
  }
  if (!root->is_object()) return WrongType("the body", "a JSON object", *root);
  if (root->contains("error") && !(*root)["error"].is_null())
    return ResponseError("the server reported an error: " + *ErrorMessageOf(*root));

  ChatResponse response;
  SBX_ASSIGN_OR_RETURN(auto id, OptionalString(*root, "id", ""));
  response.raw_id = id;
  const json* choices = Member(*root, "choices");
  if (!choices) return ResponseError("no \"choices\" in the body");
  if (!choices->is_array()) return WrongType("choices", "an array", *choices);
  if (choices->empty()) return ResponseError("\"choices\" is empty: the server returned no reply");
  const json& choice = (*choices)[0];
  if (!choice.is_object()) return WrongType("choices[0]", "an object", choice);
  const json* message = Member(choice, "message");
  if (!message) return ResponseError("choices[0] has no \"message\"");
  SBX_ASSIGN_OR_RETURN(auto parsed, ParseMessage(*message, "choices[0].message"));
  response.message = std::move(parsed);
  auto finish_reason = OptionalString(choice, "finish_reason", "choices[0]");
  if (!finish_reason) return finish_reason.error();
  response.finish_reason = *finish_reason;
  auto usage = ParseUsage(*root);
  if (!usage) return usage.error();
  response.usage = *usage;
  return response;
}

Result<json> ParseToolArguments(const ToolCall& call) {
  const std::string where = "tool call \"" + call.name + "\"";
  if (call.arguments_json.find_first_not_of(" \t\r\n") == std::string::npos) return json::object();
  std::string problem;
  auto arguments = TryParse(call.arguments_json, problem);
  if (!arguments) {
    return InvalidInput(where + ": the arguments are not valid JSON (" + problem +
                        "); send them as one JSON object");
  }
  // Some models encode the object twice, as a JSON string holding the JSON text.
  if (arguments->is_string()) {
    std::string inner_problem;
    if (auto inner = TryParse(arguments->get<std::string>(), inner_problem);
        inner && inner->is_object())
      return *inner;
  }
  if (!arguments->is_object()) {
    return InvalidInput(where + ": the arguments must be a JSON object, got " +
                        Describe(*arguments));
  }
  return *arguments;
}

}  // namespace sbx::llm
