// Unit tests for the retry schedule and the error text of failed chat requests.
#include "src/llm/retry_policy.h"

#include <gtest/gtest.h>

#include <string>

#include "src/llm/http_error.h"

namespace sbx::llm {
namespace {

using std::chrono::milliseconds;

constexpr char kKey[] = "sk-secret-0123456789";

TEST(LlmRetry, OnlyTransientStatusesAreRetried) {
  for (long status : {408, 429, 500, 502, 503, 504}) EXPECT_TRUE(IsRetryableStatus(status));
  for (long status : {200, 301, 400, 401, 403, 404, 422, 501})
    EXPECT_FALSE(IsRetryableStatus(status));
}

TEST(LlmRetry, RetryAfterAsSecondsMillisecondsOrDate) {
  const std::time_t now = 1700000000;  // Tue, 14 Nov 2023 22:13:20 GMT
  EXPECT_EQ(RetryAfterSeconds("7", "", now), 7.0);
  EXPECT_EQ(RetryAfterSeconds(" 1.5 ", "", now), 1.5);
  EXPECT_EQ(RetryAfterSeconds("7", "250", now), 0.25);  // OpenAI's finer hint wins
  EXPECT_EQ(RetryAfterSeconds("Tue, 14 Nov 2023 22:13:30 GMT", "", now), 10.0);
  EXPECT_EQ(RetryAfterSeconds("Tue, 14 Nov 2023 22:00:00 GMT", "", now), 0.0);  // past
  EXPECT_EQ(RetryAfterSeconds("", "", now), std::nullopt);
  EXPECT_EQ(RetryAfterSeconds("-3", "", now), std::nullopt);
  EXPECT_EQ(RetryAfterSeconds("soon", "x", now), std::nullopt);
}

TEST(LlmRetry, BackoffIsFullJitterUnderAnExponentialCeiling) {
  LlmConfig config;
  config.backoff_initial_seconds = 0.5;
  config.backoff_max_seconds = 30;
  EXPECT_EQ(BackoffDelay(config, 0, std::nullopt, 0.0), milliseconds(0));
  EXPECT_EQ(BackoffDelay(config, 0, std::nullopt, 0.5), milliseconds(250));
  EXPECT_EQ(BackoffDelay(config, 3, std::nullopt, 0.5), milliseconds(2000));    // 0.5 * 8 / 2
  EXPECT_EQ(BackoffDelay(config, 10, std::nullopt, 0.5), milliseconds(15000));  // capped at 30
  EXPECT_EQ(BackoffDelay(config, 1000, std::nullopt, 0.999), milliseconds(29970));
}

TEST(LlmRetry, RetryAfterIsHonouredUpToTheCap) {
  LlmConfig config;
  config.backoff_max_seconds = 30;
  EXPECT_EQ(BackoffDelay(config, 0, 2.0, 0.9), milliseconds(2000));
  EXPECT_EQ(BackoffDelay(config, 4, 0.0, 0.9), milliseconds(0));
  EXPECT_EQ(BackoffDelay(config, 0, 3600.0, 0.9), milliseconds(30000));
}

TEST(LlmHttpError, RedactReplacesEveryOccurrence) {
  EXPECT_EQ(Redact("a sk-secret-0123456789 b sk-secret-0123456789", kKey), "a *** b ***");
  EXPECT_EQ(Redact("nothing here", kKey), "nothing here");
  EXPECT_EQ(Redact("unchanged", ""), "unchanged");
}

TEST(LlmHttpError, QuotedServerTextIsPrintableBoundedAndKeyFree) {
  EXPECT_EQ(QuoteServerText("a\x1b[31m red\r\n\n  b\xc3\xa9", "", 100), "a?[31m red b??");
  // The key straddles the cut: redaction first, so no prefix of it survives.
  std::string body = std::string(290, 'x') + " Bearer " + kKey;
  std::string quoted = QuoteServerText(body, kKey, 300);
  EXPECT_EQ(quoted.find("sk-secret"), std::string::npos) << quoted;
  EXPECT_EQ(quoted.size(), 303u);
  EXPECT_TRUE(quoted.ends_with("..."));
}

TEST(LlmHttpError, StatusErrorsQuoteTheServerAndSayWhatToDo) {
  Error unauthorized = HttpStatusError(
      401, R"({"error":{"message":"Incorrect API key provided","type":"invalid_request_error"}})",
      kKey);
  EXPECT_EQ(unauthorized.code, ErrorCode::kInvalidInput);
  EXPECT_EQ(unauthorized.message, "HTTP 401: Incorrect API key provided; check OPENAI_API_KEY");
  EXPECT_EQ(HttpStatusError(404, R"({"detail":"Not Found"})", "").message,
            "HTTP 404: Not Found; check OPENAI_BASE_URL and SBX_MODEL");
  EXPECT_NE(HttpStatusError(400, R"({"error":"context too long"})", "")
                .message.find("context too long; the request was rejected"),
            std::string::npos);
  Error gateway = HttpStatusError(502, "<html><title>502 Bad Gateway</title></html>\n", "");
  EXPECT_EQ(gateway.code, ErrorCode::kIo);
  EXPECT_EQ(gateway.message,
            "HTTP 502: body: <html><title>502 Bad Gateway</title></html>; the server failed; try "
            "again later");
  EXPECT_EQ(HttpStatusError(503, "", "").message,
            "HTTP 503: empty body; the server failed; try again later");
  Error echoed = HttpStatusError(
      403,
      std::string(R"({"error":{"message":"forbidden for Authorization: Bearer )") + kKey + "\"}}",
      kKey);
  EXPECT_EQ(echoed.message.find(kKey), std::string::npos) << echoed.message;
  EXPECT_NE(echoed.message.find("Bearer ***"), std::string::npos) << echoed.message;
}

}  // namespace
}  // namespace sbx::llm
