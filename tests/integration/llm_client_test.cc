// OpenAiClient against a real HTTP server on loopback: request shape, retries, errors, usage.
#include "src/llm/openai_client.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "tests/support/chat_completion_body.h"
#include "tests/support/fake_openai_server.h"

namespace sbx::llm {
namespace {

using std::chrono::milliseconds;
using testing::FakeOpenAiServer;
using testing::FakeResponse;
using testing::RecordedRequest;

constexpr char kKey[] = "sk-test-SECRET-0123456789abcdef";

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

ChatRequest UserAsks(const std::string& text) {
  ChatRequest request;
  request.model = "test-model";
  request.messages.push_back({"user", text, {}, "", ""});
  return request;
}

class LlmClientTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(server_.Start()); }
  void TearDown() override {
    for (const std::string& note : notes_) EXPECT_FALSE(Contains(note, kKey)) << note;
  }

  LlmConfig Config(const std::string& key = kKey) {
    LlmConfig config;
    config.base_url = server_.base_url();
    config.api_key = key;
    config.model = "configured-model";
    config.connect_timeout_seconds = 2;
    config.request_timeout_seconds = 5;
    config.max_retries = 2;
    config.backoff_initial_seconds = 0.5;
    config.backoff_max_seconds = 30;
    return config;
  }

  // Sleeps are recorded, not slept; the jitter is fixed at one half.
  OpenAiClientOptions Options() {
    OpenAiClientOptions options;
    options.sleep = [this](milliseconds delay) { sleeps_.push_back(delay); };
    options.uniform01 = [] { return 0.5; };
    options.on_retry = [this](const std::string& note) { notes_.push_back(note); };
    return options;
  }

  std::string ErrorFrom(OpenAiClient& client, const ChatRequest& request = UserAsks("hi")) {
    auto response = client.Complete(request);
    EXPECT_FALSE(response);
    if (response) return "";
    EXPECT_FALSE(Contains(response.error().message, kKey)) << response.error().message;
    return response.error().message;
  }

  FakeOpenAiServer server_;
  std::vector<milliseconds> sleeps_;
  std::vector<std::string> notes_;
};

TEST_F(LlmClientTest, SendsAnOpenAiRequestWithTheKey) {
  server_.Enqueue(FakeResponse::Json(200, testing::TextCompletionBody("hello")));
  OpenAiClient client(Config(), Options());
  ChatRequest request = UserAsks("say hello");
  request.messages.insert(request.messages.begin(), {"system", "be brief", {}, "", ""});
  request.tools.push_back({"run_python", "Runs Python.", {{"type", "object"}}});
  request.temperature = 0.0;
  auto response = client.Complete(request);
  ASSERT_TRUE(response) << response.error().message;
  EXPECT_EQ(response->message.content, "hello");
  EXPECT_EQ(response->finish_reason, "stop");

  std::vector<RecordedRequest> requests = server_.requests();
  ASSERT_EQ(requests.size(), 1u);
  const RecordedRequest& sent = requests[0];
  EXPECT_EQ(sent.method, "POST");
  EXPECT_EQ(sent.path, "/v1/chat/completions");
  EXPECT_EQ(sent.Header("Content-Type"), "application/json");
  EXPECT_EQ(sent.Header("Authorization"), std::string("Bearer ") + kKey);
  EXPECT_TRUE(sent.Header("User-Agent").value_or("").starts_with("sbx/"));
  EXPECT_EQ(sent.Header("Expect"), std::nullopt);
  nlohmann::json body = sent.JsonBody();
  ASSERT_FALSE(body.is_discarded()) << sent.body;
  EXPECT_EQ(body["model"], "test-model");
  EXPECT_EQ(body["messages"][0], nlohmann::json({{"role", "system"}, {"content", "be brief"}}));
  EXPECT_EQ(body["messages"][1], nlohmann::json({{"role", "user"}, {"content", "say hello"}}));
  EXPECT_EQ(body["tools"][0]["type"], "function");
  EXPECT_EQ(body["tools"][0]["function"]["name"], "run_python");
  EXPECT_EQ(body["temperature"], 0.0);
}

TEST_F(LlmClientTest, NoKeyMeansNoAuthorizationHeaderAndTheConfiguredModel) {
  server_.Enqueue(FakeResponse::Json(200, testing::TextCompletionBody("ok")));
  OpenAiClient client(Config(""), Options());
  ChatRequest request = UserAsks(std::string("output \xff\xfe"));  // not UTF-8: still sent
  request.model = "";
  ASSERT_TRUE(client.Complete(request));
  ASSERT_EQ(server_.requests().size(), 1u);
  const RecordedRequest sent = server_.requests()[0];
  EXPECT_EQ(sent.Header("Authorization"), std::nullopt);
  nlohmann::json body = sent.JsonBody();
  ASSERT_FALSE(body.is_discarded()) << sent.body;
  EXPECT_EQ(body["model"], "configured-model");
  EXPECT_EQ(body["messages"][0]["content"], "output \xEF\xBF\xBD\xEF\xBF\xBD");
}

TEST_F(LlmClientTest, ToolCallRoundTrip) {
  server_.Enqueue(FakeResponse::Json(
      200, testing::ToolCallsCompletionBody({{"call_7", "run_python", R"({"code":"1+1"})"}})));
  server_.Enqueue(FakeResponse::Json(200, testing::TextCompletionBody("it is 2")));
  OpenAiClient client(Config(), Options());
  ChatRequest request = UserAsks("what is 1+1?");
  auto first = client.Complete(request);
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_EQ(first->finish_reason, "tool_calls");
  EXPECT_FALSE(first->message.content.has_value());
  ASSERT_EQ(first->message.tool_calls.size(), 1u);
  const ToolCall& call = first->message.tool_calls[0];
  EXPECT_EQ(call.id, "call_7");
  EXPECT_EQ(call.name, "run_python");
  auto arguments = ParseToolArguments(call);
  ASSERT_TRUE(arguments) << arguments.error().message;
  EXPECT_EQ((*arguments)["code"], "1+1");

  request.messages.push_back(first->message);
  request.messages.push_back({"tool", "2\n", {}, call.id, ""});
  auto second = client.Complete(request);
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_EQ(second->message.content, "it is 2");

  ASSERT_EQ(server_.requests().size(), 2u);
  nlohmann::json body = server_.requests()[1].JsonBody();
  ASSERT_EQ(body["messages"].size(), 3u);
  EXPECT_EQ(body["messages"][1],
            nlohmann::json::parse(R"({"role":"assistant","content":null,"tool_calls":[
                {"id":"call_7","type":"function",
                 "function":{"name":"run_python","arguments":"{\"code\":\"1+1\"}"}}]})"));
  EXPECT_EQ(body["messages"][2],
            nlohmann::json({{"role", "tool"}, {"content", "2\n"}, {"tool_call_id", "call_7"}}));
}

TEST_F(LlmClientTest, Retries503ThenSucceeds) {
  server_.Enqueue(FakeResponse::Json(503, R"({"error":{"message":"overloaded"}})"));
  server_.Enqueue(FakeResponse::Text(503, "<html>busy</html>"));
  server_.Enqueue(FakeResponse::Json(200, testing::TextCompletionBody("finally")));
  OpenAiClient client(Config(), Options());
  auto response = client.Complete(UserAsks("hi"));
  ASSERT_TRUE(response) << response.error().message;
  EXPECT_EQ(response->message.content, "finally");
  EXPECT_EQ(server_.requests().size(), 3u);
  // Full jitter at one half: 0.5 s * 2^retry / 2.
  EXPECT_EQ(sleeps_, (std::vector<milliseconds>{milliseconds(250), milliseconds(500)}));
  ASSERT_EQ(notes_.size(), 2u);
  EXPECT_EQ(notes_[0], "HTTP 503; retrying in 0.2 s (attempt 2 of 3)");
  EXPECT_EQ(notes_[1], "HTTP 503; retrying in 0.5 s (attempt 3 of 3)");
}

TEST_F(LlmClientTest, HonoursRetryAfter) {
  server_.Enqueue(FakeResponse::Json(429, R"({"error":{"message":"slow down"}})")
                      .WithHeader("Retry-After", "2"));
  server_.Enqueue(FakeResponse::Json(429, "{}").WithHeader("retry-after-ms", "1500"));
  server_.Enqueue(FakeResponse::Json(200, testing::TextCompletionBody("ok")));
  server_.Enqueue(FakeResponse::Json(503, "{}").WithHeader("Retry-After", "3600"));
  server_.Enqueue(FakeResponse::Json(200, testing::TextCompletionBody("ok")));
  OpenAiClient client(Config(), Options());
  ASSERT_TRUE(client.Complete(UserAsks("a")));
  EXPECT_EQ(sleeps_, (std::vector<milliseconds>{milliseconds(2000), milliseconds(1500)}));
  ASSERT_TRUE(client.Complete(UserAsks("b")));
  ASSERT_EQ(sleeps_.size(), 3u);
  EXPECT_EQ(sleeps_[2], milliseconds(30000));  // capped at backoff_max_seconds
  EXPECT_EQ(server_.requests().size(), 5u);
}

TEST_F(LlmClientTest, GivesUpAfterMaxRetriesNamingTheStatus) {
  for (int i = 0; i < 4; ++i)
    server_.Enqueue(FakeResponse::Json(500, R"({"error":{"message":"boom"}})"));
  OpenAiClient client(Config(), Options());
  std::string message = ErrorFrom(client);
  EXPECT_EQ(message, "POST " + server_.base_url() +
                         "/chat/completions (3 attempts): HTTP 500: boom; the server failed; try "
                         "again later");
  EXPECT_EQ(server_.requests().size(), 3u);  // max_retries = 2
  EXPECT_EQ(server_.unused_responses(), 1u);
  EXPECT_EQ(sleeps_.size(), 2u);
}

TEST_F(LlmClientTest, UnauthorizedIsReportedAtOnceWithWhatToDo) {
  server_.Enqueue(
      FakeResponse::Json(401, R"({"error":{"message":"Incorrect API key provided: sk-te****cdef.",
               "type":"invalid_request_error","code":"invalid_api_key"}})"));
  OpenAiClient client(Config(), Options());
  auto response = client.Complete(UserAsks("hi"));
  ASSERT_FALSE(response);
  EXPECT_EQ(response.error().code, ErrorCode::kInvalidInput);
  EXPECT_TRUE(Contains(response.error().message,
                       "(1 attempt): HTTP 401: Incorrect API key provided: sk-te****cdef.; check "
                       "OPENAI_API_KEY"))
      << response.error().message;
  EXPECT_EQ(server_.requests().size(), 1u);
  EXPECT_TRUE(sleeps_.empty());
}

TEST_F(LlmClientTest, BadRequestAndNotFoundSayWhatToDo) {
  server_.Enqueue(FakeResponse::Json(400, R"({"error":{"message":"tools not supported"}})"));
  server_.Enqueue(FakeResponse::Json(404, R"({"error":"model \"nope\" not found"})"));
  server_.Enqueue(FakeResponse::Text(403, "<h1>Forbidden</h1>"));
  OpenAiClient client(Config(), Options());
  std::string bad = ErrorFrom(client);
  EXPECT_TRUE(Contains(bad, "HTTP 400: tools not supported; the request was rejected")) << bad;
  std::string missing = ErrorFrom(client);
  EXPECT_TRUE(Contains(missing,
                       "HTTP 404: model \"nope\" not found; check OPENAI_BASE_URL and "
                       "SBX_MODEL"))
      << missing;
  std::string forbidden = ErrorFrom(client);
  EXPECT_TRUE(Contains(forbidden, "HTTP 403: body: <h1>Forbidden</h1>; the key may not use"))
      << forbidden;
  EXPECT_EQ(server_.requests().size(), 3u);
}

TEST_F(LlmClientTest, TheKeyNeverAppearsInErrorsEvenWhenTheServerEchoesIt) {
  auto echo_json = [](const RecordedRequest& request) {
    nlohmann::json body = {{"error",
                            {{"message", "denied for Authorization: " +
                                             request.Header("Authorization").value_or("")}}}};
    return body.dump();
  };
  auto echo_text = [](const RecordedRequest& request) {
    std::string text = "<pre>";
    for (const auto& [name, value] : request.headers) text += name + ": " + value + "\n";
    return text + "</pre>";
  };
  FakeResponse json_echo = FakeResponse::Json(401, "");
  json_echo.body_from_request = echo_json;
  FakeResponse text_echo = FakeResponse::Text(400, "");
  text_echo.body_from_request = echo_text;
  FakeResponse choices_echo = FakeResponse::Json(200, "");
  choices_echo.body_from_request = [](const RecordedRequest& request) {
    return nlohmann::json({{"choices", request.Header("Authorization").value_or("")}}).dump();
  };
  for (FakeResponse* response : {&json_echo, &text_echo}) server_.Enqueue(*response);
  for (int i = 0; i < 3; ++i) server_.Enqueue(choices_echo);  // a bad 200 body is retried
  OpenAiClient client(Config(), Options());
  for (int i = 0; i < 3; ++i) {
    std::string message = ErrorFrom(client);  // asserts the key is absent
    EXPECT_TRUE(Contains(message, "Bearer ***")) << message;
  }
  // The server really had the key to echo.
  for (const RecordedRequest& request : server_.requests())
    EXPECT_EQ(request.Header("Authorization"), std::string("Bearer ") + kKey);
}

TEST_F(LlmClientTest, MalformedJsonIsRetriedThenAnErrorNotACrash) {
  const std::string truncated_body = R"({"choices": [{"message": {"content": "hi"}},)";
  for (int i = 0; i < 3; ++i) server_.Enqueue(FakeResponse::Json(200, truncated_body));
  for (int i = 0; i < 3; ++i) server_.Enqueue(FakeResponse::Json(200, "not json at all"));
  OpenAiClient client(Config(), Options());
  std::string truncated = ErrorFrom(client);
  EXPECT_TRUE(Contains(truncated, "/chat/completions (3 attempts): chat response: not valid JSON")) << truncated;
  EXPECT_TRUE(Contains(truncated, "looks truncated")) << truncated;
  std::string garbage = ErrorFrom(client);
  EXPECT_TRUE(Contains(garbage, "not valid JSON")) << garbage;
  EXPECT_EQ(server_.requests().size(), 6u);  // a garbled body is retried like a cut one
  server_.Enqueue(FakeResponse::Json(200, "not json at all"));
  server_.Enqueue(FakeResponse::Json(200, testing::TextCompletionBody("recovered")));
  auto recovered = client.Complete(UserAsks("hi"));
  ASSERT_TRUE(recovered) << recovered.error().message;
  EXPECT_EQ(recovered->message.content, "recovered");
}

TEST_F(LlmClientTest, CutConnectionsAreRetriedThenReported) {
  std::string body = testing::TextCompletionBody("complete");
  server_.Enqueue(FakeResponse::Hangup());
  server_.Enqueue(FakeResponse::Json(200, body).TruncatedAt(body.size() / 2));
  server_.Enqueue(FakeResponse::Json(200, body));
  OpenAiClient client(Config(), Options());
  auto recovered = client.Complete(UserAsks("hi"));
  ASSERT_TRUE(recovered) << recovered.error().message;
  EXPECT_EQ(recovered->message.content, "complete");
  EXPECT_EQ(server_.requests().size(), 3u);
  ASSERT_EQ(notes_.size(), 2u);
  EXPECT_TRUE(Contains(notes_[0], "Empty reply from server")) << notes_[0];
  EXPECT_TRUE(Contains(notes_[1], "transfer closed with")) << notes_[1];

  for (int i = 0; i < 3; ++i) server_.Enqueue(FakeResponse::Json(200, body).TruncatedAt(10));
  std::string message = ErrorFrom(client);
  EXPECT_TRUE(Contains(message, "(3 attempts): transfer closed with")) << message;
  EXPECT_EQ(server_.requests().size(), 6u);
}

TEST_F(LlmClientTest, EmptyChoicesIsAnError) {
  for (int i = 0; i < 3; ++i) server_.Enqueue(FakeResponse::Json(200, R"({"id":"x","choices":[]})"));
  OpenAiClient client(Config(), Options());
  EXPECT_TRUE(Contains(ErrorFrom(client), "chat response: \"choices\" is empty"));
}

TEST_F(LlmClientTest, InvalidToolArgumentsReachTheCallerRaw) {
  server_.Enqueue(FakeResponse::Json(
      200, testing::ToolCallsCompletionBody({{"call_1", "write_file", R"({"path": "a.txt",)"}})));
  OpenAiClient client(Config(), Options());
  auto response = client.Complete(UserAsks("write"));
  ASSERT_TRUE(response) << response.error().message;  // the turn itself is fine
  ASSERT_EQ(response->message.tool_calls.size(), 1u);
  auto arguments = ParseToolArguments(response->message.tool_calls[0]);
  ASSERT_FALSE(arguments);
  EXPECT_TRUE(Contains(arguments.error().message,
                       "tool call \"write_file\": the arguments are not valid JSON"))
      << arguments.error().message;
}

TEST_F(LlmClientTest, UsageIsSummedOverCalls) {
  server_.Enqueue(FakeResponse::Json(200, testing::TextCompletionBody("a", {10, 5, 15})));
  server_.Enqueue(FakeResponse::Json(400, R"({"error":{"message":"no"}})"));
  server_.Enqueue(FakeResponse::Json(200, testing::TextCompletionBody("b", {20, 7, 27})));
  OpenAiClient client(Config(), Options());
  auto first = client.Complete(UserAsks("1"));
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_EQ(first->usage.total_tokens, 15);
  EXPECT_FALSE(client.Complete(UserAsks("2")));
  ASSERT_TRUE(client.Complete(UserAsks("3")));
  Usage total = client.total_usage();
  EXPECT_EQ(total.prompt_tokens, 30);
  EXPECT_EQ(total.completion_tokens, 12);
  EXPECT_EQ(total.total_tokens, 42);
}

TEST_F(LlmClientTest, ConnectionRefusedIsRetriedThenReported) {
  LlmConfig config = Config();
  config.base_url = "http://127.0.0.1:" + std::to_string(testing::UnusedLoopbackPort()) + "/v1";
  OpenAiClient client(config, Options());
  std::string message = ErrorFrom(client);
  EXPECT_TRUE(Contains(message, "(3 attempts): ")) << message;
  EXPECT_TRUE(Contains(message, "onnect")) << message;  // curl: "Failed to connect to ..."
  EXPECT_TRUE(Contains(message, "check OPENAI_BASE_URL and that the server is running")) << message;
  EXPECT_EQ(sleeps_.size(), 2u);
}

TEST_F(LlmClientTest, CredentialsInTheUrlStayOutOfErrors) {
  LlmConfig config = Config();
  config.base_url =
      "http://user:s3cret@127.0.0.1:" + std::to_string(testing::UnusedLoopbackPort()) +
      "/v1?api-key=s3cret";
  config.max_retries = 0;
  OpenAiClient client(config, Options());
  std::string message = ErrorFrom(client);
  EXPECT_FALSE(Contains(message, "s3cret")) << message;
  EXPECT_TRUE(Contains(message, "POST http://127.0.0.1:")) << message;
}

TEST_F(LlmClientTest, ASlowResponsePastTheTimeoutIsRetried) {
  server_.Enqueue(FakeResponse::Json(200, testing::TextCompletionBody("late")).WithDelay(10000));
  server_.Enqueue(FakeResponse::Json(200, testing::TextCompletionBody("prompt")));
  LlmConfig config = Config();
  config.request_timeout_seconds = 0.3;
  OpenAiClient client(config, Options());
  auto start = std::chrono::steady_clock::now();
  auto response = client.Complete(UserAsks("hi"));
  ASSERT_TRUE(response) << response.error().message;
  EXPECT_EQ(response->message.content, "prompt");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  ASSERT_EQ(notes_.size(), 1u);
  EXPECT_TRUE(Contains(notes_[0], "timed out")) << notes_[0];
}

TEST_F(LlmClientTest, AnOversizedBodyIsRefused) {
  server_.Enqueue(FakeResponse::Json(200, testing::TextCompletionBody(std::string(8192, 'x'))));
  OpenAiClientOptions options = Options();
  options.max_response_bytes = 4096;
  OpenAiClient client(Config(), options);
  EXPECT_TRUE(Contains(ErrorFrom(client), "(1 attempt): the response is larger than 4096 bytes"));
  EXPECT_EQ(server_.requests().size(), 1u);
}

}  // namespace
}  // namespace sbx::llm
