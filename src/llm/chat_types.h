// The chat data model sbx speaks with a model server, and its OpenAI Chat Completions wire form.
//
// These are plain values. ChatRequestToJson() builds the request body of
// `POST {base_url}/chat/completions`; ParseChatResponse() reads the response body and turns
// every way it can be wrong (not JSON, truncated, no choices, wrong types) into an Error that
// names the JSON path, never an exception. Tool-call arguments are kept as the raw text the
// model produced: a model can write arguments that are not JSON, and that is the agent's to
// report back to the model (ParseToolArguments), not a reason to drop the whole response.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/error.h"

namespace sbx::llm {

// One function call the assistant asked for.
struct ToolCall {
  std::string id;              // echoed back as Message::tool_call_id of the result
  std::string name;            // the function's name, as the model wrote it
  std::string arguments_json;  // raw text; see ParseToolArguments
};

// One message of the conversation. role is "system", "user", "assistant" or "tool".
struct Message {
  std::string role;
  std::optional<std::string> content;  // null for an assistant turn that only calls tools
  std::vector<ToolCall> tool_calls;    // assistant turns only
  std::string tool_call_id;            // tool results only: the ToolCall::id answered
  std::string name;                    // optional participant or tool name; omitted when empty
};

// A function the model may call. parameters is a JSON Schema object.
struct ToolSpec {
  std::string name;
  std::string description;
  nlohmann::json parameters = nlohmann::json::object();
};

struct ChatRequest {
  std::string model;
  std::vector<Message> messages;
  std::vector<ToolSpec> tools;        // omitted from the body when empty
  std::optional<double> temperature;  // server default when unset
  std::optional<int> max_tokens;      // server default when unset
};

// Token counts as the server reported them (zero when it reported none).
struct Usage {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  int64_t total_tokens = 0;

  Usage& operator+=(const Usage& other);
};

struct ChatResponse {
  Message message;            // the first choice's message; role is "assistant"
  std::string finish_reason;  // "stop", "tool_calls", "length", ...; empty when absent
  Usage usage;
  std::string raw_id;  // the server's response id, for transcripts and support requests
};

// The Chat Completions request body. Tools become {"type":"function","function":{...}},
// assistant tool calls {"id","type":"function","function":{"name","arguments"}}, a tool
// result carries tool_call_id, and an unset content is sent as null. Strings that are not
// valid UTF-8 (program output can be anything) are replaced when the body is serialized with
// SerializeJson, so the request never fails on them.
nlohmann::json ChatRequestToJson(const ChatRequest& request);

// One message in wire form (also used by tests to script a server's reply).
nlohmann::json MessageToJson(const Message& message);

// Serializes without throwing: invalid UTF-8 becomes U+FFFD.
std::string SerializeJson(const nlohmann::json& value);

// Reads a Chat Completions response body. Errors (code kIo) say what was wrong and where,
// e.g. "chat response: choices[0].message.tool_calls[0].function.name: expected a string,
// got number 7". A body carrying an OpenAI-style {"error": {...}} is reported with the
// server's message. Only the first choice is read.
Result<ChatResponse> ParseChatResponse(const std::string& body);

// The server's own words from an error body: error.message (OpenAI, LiteLLM, llama.cpp), a
// string error (Ollama), or a top-level message/detail (vLLM, FastAPI). nullopt otherwise.
std::optional<std::string> ParseServerErrorMessage(const std::string& body);

// Parses a tool call's arguments, which must be a JSON object (an empty string counts as {}).
// The error (code kInvalidInput) names the tool and the JSON problem, in words fit to send
// back to the model so it can correct itself.
Result<nlohmann::json> ParseToolArguments(const ToolCall& call);

}  // namespace sbx::llm
