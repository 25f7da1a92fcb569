// Redaction, quoting of untrusted server text, and the per-status advice.
#include "src/llm/http_error.h"

#include "src/llm/chat_types.h"

namespace sbx::llm {
namespace {

constexpr char kRedacted[] = "***";

const char* AdviceFor(long status) {
  switch (status) {
    case 400:
      return "the request was rejected; check that SBX_MODEL supports tool calling and that the "
             "conversation fits its context";
    case 401:
      return "check OPENAI_API_KEY";
    case 403:
      return "the key may not use this model or endpoint; check OPENAI_API_KEY and SBX_MODEL";
    case 404:
      return "check OPENAI_BASE_URL and SBX_MODEL";
    case 408:
    case 429:
      return "the server is rate-limiting or out of quota; wait, or check the account's limits";
    default:
      if (status >= 500) return "the server failed; try again later";
      if (status >= 300 && status < 400)
        return "the server redirected; check OPENAI_BASE_URL (use the final URL)";
      return "unexpected status; check OPENAI_BASE_URL";
  }
}

}  // namespace

std::string Redact(std::string text, const std::string& secret) {
  if (secret.empty()) return text;
  for (size_t at = text.find(secret); at != std::string::npos;
       at = text.find(secret, at + sizeof(kRedacted) - 1)) {
    text.replace(at, secret.size(), kRedacted);
  }
  return text;
}

std::string QuoteServerText(const std::string& text, const std::string& secret, size_t max_chars) {
  std::string redacted = Redact(text, secret);
  std::string quoted;
  for (unsigned char c : redacted) {
    if (quoted.size() >= max_chars) {
      quoted += "...";
      break;
    }
    bool space = c == ' ' || c == '\t' || c == '\r' || c == '\n';
    if (space) {
      if (!quoted.empty() && quoted.back() != ' ') quoted += ' ';
    } else {
      quoted += (c < 0x20 || c >= 0x7f) ? '?' : static_cast<char>(c);
    }
  }
  while (!quoted.empty() && quoted.back() == ' ') quoted.pop_back();
  return quoted;
}

Error HttpStatusError(long status, const std::string& body, const std::string& secret) {
  std::string said;
  if (auto message = ParseServerErrorMessage(body)) {
    said = QuoteServerText(*message, secret);
  } else if (!body.empty()) {
    said = "body: " + QuoteServerText(body, secret, 200);
  } else {
    said = "empty body";
  }
  bool settings = status == 400 || status == 401 || status == 403 || status == 404;
  return MakeError(settings ? ErrorCode::kInvalidInput : ErrorCode::kIo,
                   "HTTP " + std::to_string(status) + ": " + said + "; " + AdviceFor(status));
}

}  // namespace sbx::llm
