// Error text for a failed chat request: what the server said, what to do, and no secrets.
//
// Server text is untrusted: it may be HTML, megabytes long, contain terminal escapes, or echo
// the request's Authorization header back. Everything quoted from it goes through
// QuoteServerText, which removes the key before it shortens anything (so no prefix of the key
// can survive a cut).
#pragma once

#include <string>

#include "base/error.h"

namespace sbx::llm {

// Every occurrence of `secret` in `text` replaced by "***". An empty secret changes nothing.
std::string Redact(std::string text, const std::string& secret);

// `text` with `secret` redacted, control and non-ASCII bytes shown as '?', runs of whitespace
// folded to one space, and at most `max_chars` characters kept ("..." marks a cut).
std::string QuoteServerText(const std::string& text, const std::string& secret,
                            size_t max_chars = 300);

// The error for a final non-2xx response, e.g.
//   "HTTP 401: Incorrect API key provided; check OPENAI_API_KEY".
// It quotes the server's error message when the body is OpenAI-style JSON, else a snippet of
// the body, and ends with what to do for that status. Code kInvalidInput for 400/401/403/404
// (the operator's settings or request must change), kIo otherwise.
Error HttpStatusError(long status, const std::string& body, const std::string& secret);

}  // namespace sbx::llm
