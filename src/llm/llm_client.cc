// The LlmClient interface's out-of-line destructor (anchors its vtable here).
#include "src/llm/llm_client.h"

namespace sbx::llm {

LlmClient::~LlmClient() = default;

}  // namespace sbx::llm
