// Chat Completions response bodies for scripting FakeOpenAiServer.
#pragma once

#include <string>
#include <vector>

#include "src/llm/chat_types.h"

namespace sbx::testing {

// A response body with one choice holding `message`, as OpenAI sends it.
std::string ChatCompletionBody(const llm::Message& message, const std::string& finish_reason,
                               const llm::Usage& usage = {});

// An assistant reply in words (finish_reason "stop").
std::string TextCompletionBody(const std::string& content, const llm::Usage& usage = {});

// An assistant turn that only calls tools (content null, finish_reason "tool_calls").
std::string ToolCallsCompletionBody(const std::vector<llm::ToolCall>& calls,
                                    const llm::Usage& usage = {});

}  // namespace sbx::testing
