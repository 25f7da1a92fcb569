// Building scripted Chat Completions response bodies from the client's own message type.
#include "tests/support/chat_completion_body.h"

#include <atomic>

namespace sbx::testing {

std::string ChatCompletionBody(const llm::Message& message, const std::string& finish_reason,
                               const llm::Usage& usage) {
  static std::atomic<int> next_id{1};
  nlohmann::json body = {{"id", "chatcmpl-fake-" + std::to_string(next_id++)},
                         {"object", "chat.completion"},
                         {"created", 0},
                         {"model", "fake-model"},
                         {"choices",
                          {{{"index", 0},
                            {"message", llm::MessageToJson(message)},
                            {"finish_reason", finish_reason}}}},
                         {"usage",
                          {{"prompt_tokens", usage.prompt_tokens},
                           {"completion_tokens", usage.completion_tokens},
                           {"total_tokens", usage.total_tokens}}}};
  return llm::SerializeJson(body);
}

std::string TextCompletionBody(const std::string& content, const llm::Usage& usage) {
  return ChatCompletionBody({"assistant", content, {}, "", ""}, "stop", usage);
}

std::string ToolCallsCompletionBody(const std::vector<llm::ToolCall>& calls,
                                    const llm::Usage& usage) {
  return ChatCompletionBody({"assistant", std::nullopt, calls, "", ""}, "tool_calls", usage);
}

}  // namespace sbx::testing
