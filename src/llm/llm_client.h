// LlmClient: the one interface the agent loop uses to talk to a model.
//
// The agent depends only on this, so its tests script a fake client and need no network.
// OpenAiClient (openai_client.h) is the real implementation.
#pragma once

#include "base/error.h"
#include "src/llm/chat_types.h"

namespace sbx::llm {

class LlmClient {
 public:
  virtual ~LlmClient();

  // Sends the conversation and returns the model's next message. An error is final: an
  // implementation that retries has already done so. Error messages never contain credentials.
  virtual Result<ChatResponse> Complete(const ChatRequest& request) = 0;
};

}  // namespace sbx::llm
