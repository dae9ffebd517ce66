// A minimal HTTP client for the notifier: one JSON POST, one answer. Wraps libcurl.
//
// Decisions that matter to an operator:
//  - No proxy: the proxy environment variables (http_proxy, HTTPS_PROXY, ...) are ignored.
//    The collector is a daemon whose environment is whatever systemd or a login shell left
//    behind; notification endpoints are configured explicitly, and a stray proxy setting must
//    not silently reroute (or break) them.
//  - Only http:// and https:// URLs; redirects are not followed (a redirected POST is almost
//    always a misconfigured URL, and following it would hide that).
//  - At most 64 KiB of an answer is kept; the rest is read and dropped.
//
// Thread-safety: Post may be called from any number of threads (one curl handle per call).
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

#include "absl/status/statusor.h"

namespace devtime::collector::notify {

struct HttpResponse {
  long status = 0;   // HTTP status code (libcurl's type)
  std::string body;  // at most kMaxResponseBytes
};

inline constexpr std::size_t kMaxResponseBytes = 64 * 1024;

// POSTs `json_body` (Content-Type: application/json) to `url`, waiting at most `timeout` for
// the whole exchange. Any HTTP answer, 2xx or not, is a response; UNAVAILABLE when no answer
// came (cannot connect, timeout, TLS failure), INVALID_ARGUMENT for a URL curl refuses. Error
// messages name the endpoint by RedactUrl(url) only.
absl::StatusOr<HttpResponse> Post(const std::string& url, const std::string& json_body,
                                  std::chrono::milliseconds timeout);

// True for 2xx.
bool IsSuccess(const HttpResponse& response);

// OK for 2xx; otherwise UNAVAILABLE (5xx, 408, 429: worth retrying as is) or
// FAILED_PRECONDITION (the receiver refuses this request), with DescribeResponse as message.
absl::Status ResponseStatus(const HttpResponse& response);

// "HTTP 500: <the first 200 bytes of the body>", made safe to store and log: cut at a UTF-8
// character boundary, invalid bytes replaced by '?', control characters by spaces.
std::string DescribeResponse(const HttpResponse& response);

// The URL without user info, path, query or fragment ("https://hooks.example.com/…"):
// webhook URLs often carry their secret in the path, and error messages end up in logs and in
// the database.
std::string RedactUrl(const std::string& url);

// `text` cut to at most `max_bytes` at a character boundary, invalid UTF-8 replaced by '?',
// control characters (newlines included) by spaces; what DescribeResponse does to the body.
std::string PrintablePrefix(const std::string& text, std::size_t max_bytes);

}  // namespace devtime::collector::notify
