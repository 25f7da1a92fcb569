// Unit tests for the Chat Completions wire form: request bodies, response parsing, arguments.
#include "src/llm/chat_types.h"

#include <gtest/gtest.h>

#include <string>

namespace sbx::llm {
namespace {

using nlohmann::json;

ChatRequest ToolRound() {
  ChatRequest request;
  request.model = "m1";
  request.messages.push_back({"system", "be brief", {}, "", ""});
  request.messages.push_back({"user", "sum 1..3", {}, "", ""});
  request.messages.push_back(
      {"assistant", std::nullopt, {{"call_a", "run_python", R"j({"code":"print(6)"})j"}}, "", ""});
  request.messages.push_back({"tool", "6\n", {}, "call_a", "run_python"});
  request.tools.push_back({"run_python",
                           "Runs Python.",
                           {{"type", "object"},
                            {"properties", {{"code", {{"type", "string"}}}}},
                            {"required", {"code"}}}});
  return request;
}

// A response body around one choice's message.
std::string Reply(const json& message, const json& extra = json::object()) {
  json body = {{"id", "chatcmpl-1"},
               {"choices", {{{"index", 0}, {"message", message}, {"finish_reason", "stop"}}}},
               {"usage", {{"prompt_tokens", 11}, {"completion_tokens", 7}, {"total_tokens", 18}}}};
  body.update(extra);
  return body.dump();
}

std::string ErrorOf(const std::string& body) {
  auto response = ParseChatResponse(body);
  EXPECT_FALSE(response) << body;
  return response ? "" : response.error().message;
}

TEST(LlmChatTypes, RequestBodyHasTheOpenAiShape) {
  ChatRequest request = ToolRound();
  json body = ChatRequestToJson(request);
  EXPECT_EQ(body["model"], "m1");
  ASSERT_EQ(body["messages"].size(), 4u);
  EXPECT_EQ(body["messages"][0], json({{"role", "system"}, {"content", "be brief"}}));
  const json& assistant = body["messages"][2];
  EXPECT_TRUE(assistant["content"].is_null());
  EXPECT_EQ(assistant["tool_calls"], json::parse(R"([{"id":"call_a","type":"function",
                "function":{"name":"run_python","arguments":"{\"code\":\"print(6)\"}"}}])"));
  EXPECT_EQ(body["messages"][3], json({{"role", "tool"},
                                       {"content", "6\n"},
                                       {"tool_call_id", "call_a"},
                                       {"name", "run_python"}}));
  ASSERT_EQ(body["tools"].size(), 1u);
  EXPECT_EQ(body["tools"][0]["type"], "function");
  EXPECT_EQ(body["tools"][0]["function"]["name"], "run_python");
  EXPECT_EQ(body["tools"][0]["function"]["description"], "Runs Python.");
  EXPECT_EQ(body["tools"][0]["function"]["parameters"]["required"], json({"code"}));
  EXPECT_FALSE(body.contains("temperature"));
  EXPECT_FALSE(body.contains("max_tokens"));

  request.tools.clear();
  request.temperature = 0.25;
  request.max_tokens = 512;
  body = ChatRequestToJson(request);
  EXPECT_FALSE(body.contains("tools"));
  EXPECT_EQ(body["temperature"], 0.25);
  EXPECT_EQ(body["max_tokens"], 512);
}

TEST(LlmChatTypes, InvalidUtf8InContentIsReplacedNotThrown) {
  ChatRequest request;
  request.model = "m";
  request.messages.push_back({"tool", std::string("bytes \xff\xfe end"), {}, "c", ""});
  std::string text = SerializeJson(ChatRequestToJson(request));
  json parsed = json::parse(text);
  EXPECT_EQ(parsed["messages"][0]["content"], "bytes \xEF\xBF\xBD\xEF\xBF\xBD end");
}

TEST(LlmChatTypes, ParsesATextReply) {
  auto response = ParseChatResponse(Reply({{"role", "assistant"}, {"content", "done"}}));
  ASSERT_TRUE(response) << response.error().message;
  EXPECT_EQ(response->message.role, "assistant");
  EXPECT_EQ(response->message.content, "done");
  EXPECT_TRUE(response->message.tool_calls.empty());
  EXPECT_EQ(response->finish_reason, "stop");
  EXPECT_EQ(response->raw_id, "chatcmpl-1");
  EXPECT_EQ(response->usage.prompt_tokens, 11);
  EXPECT_EQ(response->usage.completion_tokens, 7);
  EXPECT_EQ(response->usage.total_tokens, 18);
}

TEST(LlmChatTypes, ParsesToolCallsWithNullContent) {
  json message = json::parse(R"({"role":"assistant","content":null,"tool_calls":[
      {"id":"call_1","type":"function",
       "function":{"name":"run_shell","arguments":"{\"cmd\":\"ls\"}"}},
      {"type":"function","function":{"name":"list_files","arguments":{"path":"."}}}]})");
  auto response = ParseChatResponse(Reply(message));
  ASSERT_TRUE(response) << response.error().message;
  EXPECT_FALSE(response->message.content.has_value());
  ASSERT_EQ(response->message.tool_calls.size(), 2u);
  EXPECT_EQ(response->message.tool_calls[0].id, "call_1");
  EXPECT_EQ(response->message.tool_calls[0].name, "run_shell");
  EXPECT_EQ(response->message.tool_calls[0].arguments_json, R"({"cmd":"ls"})");
  // A server that omits the id and sends parsed arguments still yields a usable call.
  EXPECT_EQ(response->message.tool_calls[1].id, "call_1");
  EXPECT_EQ(response->message.tool_calls[1].arguments_json, R"({"path":"."})");
}

TEST(LlmChatTypes, MissingIdsAreNumberedByPosition) {
  json message = json::parse(R"({"tool_calls":[
      {"function":{"name":"a","arguments":"{}"}},{"function":{"name":"b","arguments":"{}"}}]})");
  auto response = ParseChatResponse(Reply(message));
  ASSERT_TRUE(response) << response.error().message;
  EXPECT_EQ(response->message.role, "assistant");
  EXPECT_EQ(response->message.tool_calls[0].id, "call_0");
  EXPECT_EQ(response->message.tool_calls[1].id, "call_1");
}

TEST(LlmChatTypes, ContentPartsAndRefusalsBecomeText) {
  auto parts = ParseChatResponse(Reply(json::parse(
      R"({"content":[{"type":"text","text":"a"},{"type":"image"},{"type":"text","text":"b"}]})")));
  ASSERT_TRUE(parts) << parts.error().message;
  EXPECT_EQ(parts->message.content, "ab");
  auto refusal = ParseChatResponse(Reply(json::parse(R"({"content":null,"refusal":"no"})")));
  ASSERT_TRUE(refusal) << refusal.error().message;
  EXPECT_EQ(refusal->message.content, "no");
}

TEST(LlmChatTypes, MalformedAndTruncatedBodiesAreErrors) {
  EXPECT_EQ(ErrorOf(""), "chat response: the body is empty");
  std::string malformed = ErrorOf("{\"choices\": [}");
  EXPECT_EQ(malformed.find("truncated"), std::string::npos) << malformed;
  EXPECT_NE(malformed.find("not valid JSON"), std::string::npos) << malformed;
  EXPECT_NE(malformed.find("line 1, column 14"), std::string::npos) << malformed;
  std::string full = Reply({{"content", "hello"}});
  std::string truncated = ErrorOf(full.substr(0, full.size() / 2));
  EXPECT_NE(truncated.find("truncated"), std::string::npos) << truncated;
  EXPECT_NE(ErrorOf("<html>502 Bad Gateway</html>").find("not valid JSON"), std::string::npos);
  std::string deep = std::string(100000, '[') + std::string(100000, ']');
  EXPECT_NE(ErrorOf(deep).find("nested deeper than"), std::string::npos);
}

TEST(LlmChatTypes, MissingOrEmptyChoicesAreErrors) {
  EXPECT_EQ(ErrorOf(R"({"id":"x"})"), "chat response: no \"choices\" in the body");
  EXPECT_EQ(ErrorOf(R"({"choices":[]})"),
            "chat response: \"choices\" is empty: the server returned no reply");
  EXPECT_EQ(ErrorOf(R"({"choices":[{"index":0,"finish_reason":"stop"}]})"),
            "chat response: choices[0] has no \"message\"");
  EXPECT_EQ(ErrorOf(R"({"error":{"message":"model overloaded","type":"server_error"}})"),
            "chat response: the server reported an error: model overloaded");
}

TEST(LlmChatTypes, WrongTypesNameTheirPath) {
  struct Case {
    std::string body;
    std::string expected;
  };
  const Case cases[] = {
      {"[1,2]", "the body: expected a JSON object, got array [1,2]"},
      {R"({"choices":{}})", "choices: expected an array, got object {}"},
      {R"({"choices":[7]})", "choices[0]: expected an object, got number 7"},
      {R"({"choices":[{"message":"hi"}]})", "choices[0].message: expected an object, got string"},
      {R"({"choices":[{"message":{"content":5}}]})",
       "choices[0].message.content: expected a string or null, got number 5"},
      {R"({"choices":[{"message":{"tool_calls":{}}}]})",
       "choices[0].message.tool_calls: expected an array"},
      {R"({"choices":[{"message":{"tool_calls":[{"id":"a"}]}}]})",
       "choices[0].message.tool_calls[0]: no \"function\""},
      {R"({"choices":[{"message":{"tool_calls":[{"function":{"name":7}}]}}]})",
       "choices[0].message.tool_calls[0].function.name: expected a string, got number 7"},
      {R"({"choices":[{"message":{"tool_calls":[{"function":{"arguments":"{}"}}]}}]})",
       "choices[0].message.tool_calls[0].function.name: missing or empty"},
      {R"({"choices":[{"message":{"tool_calls":[{"function":{"name":"f","arguments":3}}]}}]})",
       "choices[0].message.tool_calls[0].function.arguments: expected a string, got number 3"},
      {R"({"choices":[{"message":{},"finish_reason":1}]})",
       "choices[0].finish_reason: expected a string"},
      {R"({"choices":[{"message":{}}],"usage":[]})", "usage: expected an object"},
      {R"({"choices":[{"message":{}}],"usage":{"prompt_tokens":-1}})",
       "usage.prompt_tokens: expected a token count, got number -1"},
      {R"({"id":5,"choices":[{"message":{}}]})", "id: expected a string, got number 5"},
  };
  for (const Case& c : cases) {
    std::string message = ErrorOf(c.body);
    EXPECT_EQ(message.rfind("chat response: " + c.expected, 0), 0u)
        << c.body << "\n  gave: " << message;
  }
}

TEST(LlmChatTypes, UsageAddsUpAndTotalFallsBackToTheSum) {
  Usage sum;
  sum += Usage{1, 2, 3};
  sum += Usage{10, 20, 30};
  EXPECT_EQ(sum.prompt_tokens, 11);
  EXPECT_EQ(sum.completion_tokens, 22);
  EXPECT_EQ(sum.total_tokens, 33);
  auto response = ParseChatResponse(
      R"({"choices":[{"message":{"content":"x"}}],
          "usage":{"prompt_tokens":4,"completion_tokens":5}})");
  ASSERT_TRUE(response) << response.error().message;
  EXPECT_EQ(response->usage.total_tokens, 9);
  auto no_usage = ParseChatResponse(R"({"choices":[{"message":{"content":"x"}}]})");
  ASSERT_TRUE(no_usage) << no_usage.error().message;
  EXPECT_EQ(no_usage->usage.total_tokens, 0);
}

TEST(LlmChatTypes, ToolArgumentsParseOrSayWhatIsWrong) {
  auto good = ParseToolArguments({"c", "run_python", R"j({"code": "print(1)"})j"});
  ASSERT_TRUE(good) << good.error().message;
  EXPECT_EQ((*good)["code"], "print(1)");
  auto empty = ParseToolArguments({"c", "list_files", "  "});
  ASSERT_TRUE(empty);
  EXPECT_EQ(*empty, json::object());
  auto twice = ParseToolArguments({"c", "run_shell", R"("{\"cmd\": \"ls\"}")"});
  ASSERT_TRUE(twice) << twice.error().message;
  EXPECT_EQ((*twice)["cmd"], "ls");

  auto broken = ParseToolArguments({"c", "run_python", R"j({"code": "print(1)")j"});
  ASSERT_FALSE(broken);
  EXPECT_EQ(broken.error().code, ErrorCode::kInvalidInput);
  const std::string& message = broken.error().message;
  EXPECT_EQ(message.rfind("tool call \"run_python\": the arguments are not valid JSON (", 0), 0u)
      << message;
  EXPECT_NE(message.find("unexpected end of input"), std::string::npos) << message;
  EXPECT_NE(message.find("send them as one JSON object"), std::string::npos) << message;

  auto array = ParseToolArguments({"c", "write_file", "[1]"});
  ASSERT_FALSE(array);
  EXPECT_EQ(array.error().message,
            "tool call \"write_file\": the arguments must be a JSON object, got array [1]");
}

TEST(LlmChatTypes, ServerErrorMessagesInTheCommonDialects) {
  EXPECT_EQ(ParseServerErrorMessage(R"({"error":{"message":"bad key","code":"x"}})"), "bad key");
  EXPECT_EQ(ParseServerErrorMessage(R"({"error":"model 'q' not found"})"), "model 'q' not found");
  EXPECT_EQ(ParseServerErrorMessage(R"({"object":"error","message":"too long"})"), "too long");
  EXPECT_EQ(ParseServerErrorMessage(R"({"detail":"Not Found"})"), "Not Found");
  EXPECT_EQ(ParseServerErrorMessage("<html>oops</html>"), std::nullopt);
  EXPECT_EQ(ParseServerErrorMessage(R"({"choices":[]})"), std::nullopt);
}

}  // namespace
}  // namespace sbx::llm
