// The text mode of the agent (for models without tool calling, as in AutoGen and AG2): code
// comes as fenced blocks in the model's reply, and the conversation ends on TERMINATE.
#pragma once

#include <string>
#include <vector>

#include "src/executor/code_executor.h"

namespace sbx::agent {

// The fenced blocks of `text` in order. ```python, ```py and a bare ``` are Python; ```bash,
// ```shell and ```sh are shell; any other tag keeps its name, so the executor rejects it
// with a message the model can act on. An unterminated fence runs to the end of the text.
std::vector<executor::CodeBlock> ExtractCodeBlocks(const std::string& text);

// True when the reply ends the conversation: the word TERMINATE outside any code block.
bool SaysTerminate(const std::string& text);

}  // namespace sbx::agent
