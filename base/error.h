// The one error type of sbx and the Result<T> that carries it (shaped like std::expected).
#pragma once

#include <cerrno>
#include <string>
#include <utility>
#include <variant>

namespace sbx {

// What kind of failure an Error is; decides the CLI exit code (all map to 125 in the CLI,
// but callers can tell a refused input from a failed setup).
enum class ErrorCode {
  kInvalidInput,   // a policy, flag or path was rejected before anything was created
  kSetupFailed,    // a required isolation layer could not be set up
  kUnavailable,    // a kernel feature or host resource is missing
  kIo,             // a read/write/exec failed
  kInternal,
};

// code + errno + message. Context is prepended on the way up:
//   "cgroup: mkdir(/sys/fs/cgroup/memory/sbx/run-7): Permission denied".
struct Error {
  ErrorCode code = ErrorCode::kInternal;
  int err_no = 0;
  std::string message;

  // Returns this error with "context: " in front of the message.
  Error Context(const std::string& context) const {
    return Error{code, err_no, context + ": " + message};
  }
  // The message, and the errno text when there is one.
  std::string ToString() const;
};

Error MakeError(ErrorCode code, std::string message);
// An error from a failed syscall: "<what>: <strerror(err_no)>".
Error SysError(ErrorCode code, const std::string& what, int err_no = errno);
Error InvalidInput(std::string message);

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::move(value)) {}  // NOLINT: implicit like std::expected
  Result(Error error) : state_(std::move(error)) {}  // NOLINT

  bool has_value() const { return state_.index() == 0; }
  explicit operator bool() const { return has_value(); }
  T& value() & { return std::get<0>(state_); }
  const T& value() const& { return std::get<0>(state_); }
  T&& value() && { return std::get<0>(std::move(state_)); }
  const Error& error() const { return std::get<1>(state_); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Error> state_;
};

struct Ok {};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Ok) {}  // NOLINT
  Result(Error error) : error_(std::move(error)), has_error_(true) {}  // NOLINT
  bool has_value() const { return !has_error_; }
  explicit operator bool() const { return has_value(); }
  const Error& error() const { return error_; }

 private:
  Error error_;
  bool has_error_ = false;
};

}  // namespace sbx

// Returns the error of `expr` (a Result) from the enclosing function, with context.
#define SBX_TRY_CTX(expr, context)                          \
  do {                                                      \
    auto&& sbx_try_result_ = (expr);                        \
    if (!sbx_try_result_) return sbx_try_result_.error().Context(context); \
  } while (0)
#define SBX_TRY(expr)                                       \
  do {                                                      \
    auto&& sbx_try_result_ = (expr);                        \
    if (!sbx_try_result_) return sbx_try_result_.error();   \
  } while (0)

// Evaluates `expr` (a Result<T>); on failure returns its error from the enclosing function,
// unchanged, and `lhs` is not assigned; else moves the value into `lhs`, which may declare it:
//   SBX_ASSIGN_OR_RETURN(auto text, ReadSmallFile(path));
// A statement of its own (it may declare, so never the body of an unbraced if). The Result
// lives on in a temporary named after the line, so uses on different lines share a scope.
// A comma in `expr` must be inside parentheses.
#define SBX_ASSIGN_OR_RETURN(lhs, expr) \
  SBX_ASSIGN_OR_RETURN_IMPL_(SBX_CONCAT_(sbx_assign_or_return_, __LINE__), lhs, expr)
#define SBX_ASSIGN_OR_RETURN_IMPL_(result, lhs, expr) \
  auto result = (expr);                               \
  if (!result) return result.error();                 \
  lhs = std::move(*result)
#define SBX_CONCAT_(a, b) SBX_CONCAT_IMPL_(a, b)
#define SBX_CONCAT_IMPL_(a, b) a##b
