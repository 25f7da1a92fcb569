// Fakes the agent and team tests share: a model answering from a queue and an
// executor that runs nothing.
#pragma once

#include <deque>
#include <string>
#include <vector>

#include "src/executor/code_executor.h"
#include "src/llm/llm_client.h"

namespace sbx::testing {

// Records every request and answers from a queue; an empty queue is an LLM
// error.
class FakeModel final : public llm::LlmClient {
 public:
  std::deque<Result<llm::ChatResponse>> replies;
  std::vector<llm::ChatRequest> requests;
  Result<llm::ChatResponse> Complete(const llm::ChatRequest& request) override {
    requests.push_back(request);
    if (replies.empty()) return MakeError(ErrorCode::kIo, "HTTP 503: overloaded (after 4 retries)");
    auto reply = replies.front();
    replies.pop_front();
    return reply;
  }
};

inline llm::ChatResponse Text(const std::string& content) {
  llm::ChatResponse response;
  response.message = {"assistant", content, {}, "", ""};
  response.usage = {10, 5, 15};
  return response;
}

inline llm::ChatResponse Calls(std::vector<llm::ToolCall> calls) {
  llm::ChatResponse response;
  response.message = {"assistant", std::nullopt, std::move(calls), "", ""};
  response.usage = {10, 5, 15};
  return response;
}

// Runs nothing: records the blocks and answers with a canned result.
class FakeExecutor final : public executor::CodeExecutor {
 public:
  std::vector<std::vector<executor::CodeBlock>> calls;
  executor::CodeResult next;
  Result<executor::CodeResult> Execute(const std::vector<executor::CodeBlock>& blocks) override {
    calls.push_back(blocks);
    if (auto valid = executor::ValidateBlocks(blocks); !valid) {
      executor::CodeResult rejected;
      rejected.rejected = true;
      rejected.notice = valid.error().message;
      return rejected;
    }
    return next;
  }
  std::string Name() const override { return "fake"; }
};

}  // namespace sbx::testing
