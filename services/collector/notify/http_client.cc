#include "services/collector/notify/http_client.h"

#include <curl/curl.h>

#include <algorithm>
#include <memory>
#include <mutex>

namespace devtime::collector::notify {
namespace {

constexpr std::size_t kDescribedBodyBytes = 200;

// curl_global_init is not thread-safe and must run before the first handle; once per process.
void InitCurlOnce() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct EasyDeleter {
  void operator()(CURL* handle) const { curl_easy_cleanup(handle); }
};
struct HeadersDeleter {
  void operator()(curl_slist* headers) const { curl_slist_free_all(headers); }
};

// Keeps the first kMaxResponseBytes; returning the full size tells curl to go on reading.
size_t AppendBody(char* data, size_t size, size_t count, void* user) {
  auto* body = static_cast<std::string*>(user);
  size_t bytes = size * count;
  if (body->size() < kMaxResponseBytes) {
    body->append(data, std::min(bytes, kMaxResponseBytes - body->size()));
  }
  return bytes;
}

// Length of the valid UTF-8 sequence starting at text[i], or 0 if it is not one
// (overlong forms, surrogates and code points above U+10FFFF are invalid, as for PostgreSQL).
std::size_t Utf8SequenceLength(const std::string& text, std::size_t i) {
  auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  unsigned char lead = byte(i);
  if (lead < 0x80) return 1;
  std::size_t length = 0;
  unsigned char low = 0x80, high = 0xBF;  // allowed range of the second byte
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;
    if (lead == 0xED) high = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) low = 0x90;
    if (lead == 0xF4) high = 0x8F;
  } else {
    return 0;
  }
  if (i + length > text.size()) return 0;
  if (byte(i + 1) < low || byte(i + 1) > high) return 0;
  for (std::size_t k = 2; k < length; ++k) {
    if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
  }
  return length;
}

}  // namespace

absl::StatusOr<HttpResponse> Post(const std::string& url, const std::string& json_body,
                                  std::chrono::milliseconds timeout) {
  InitCurlOnce();
  std::unique_ptr<CURL, EasyDeleter> handle(curl_easy_init());
  if (!handle) return absl::ResourceExhaustedError("cannot create a curl handle");
  std::unique_ptr<curl_slist, HeadersDeleter> headers;
  for (const char* header : {"Content-Type: application/json", "Accept: application/json",
                             // No "Expect: 100-continue" round trip before larger bodies.
                             "Expect:"}) {
    headers.reset(curl_slist_append(headers.release(), header));
  }
  HttpResponse response;
  char error[CURL_ERROR_SIZE] = {};
  CURL* h = handle.get();
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(h, CURLOPT_PROXY, "");     // "" = never a proxy, whatever the environment says
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);  // timeouts without SIGALRM: we run in threads
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout.count()));
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(h, CURLOPT_USERAGENT, "devtime-collector");
  curl_easy_setopt(h, CURLOPT_POSTFIELDS, json_body.data());
  curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(json_body.size()));
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, AppendBody);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &response.body);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, error);

  CURLcode code = curl_easy_perform(h);
  if (code != CURLE_OK) {
    std::string detail = error[0] != '\0' ? error : curl_easy_strerror(code);
    std::string message = "POST " + RedactUrl(url) + ": " + PrintablePrefix(detail, 512);
    if (code == CURLE_URL_MALFORMAT || code == CURLE_UNSUPPORTED_PROTOCOL) {
      return absl::InvalidArgumentError(message);
    }
    return absl::UnavailableError(message);
  }
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &response.status);
  return response;
}

bool IsSuccess(const HttpResponse& response) {
  return response.status >= 200 && response.status < 300;
}

absl::Status ResponseStatus(const HttpResponse& response) {
  if (IsSuccess(response)) return absl::OkStatus();
  long code = response.status;
  if (code >= 500 || code == 408 || code == 429) {
    return absl::UnavailableError(DescribeResponse(response));
  }
  return absl::FailedPreconditionError(DescribeResponse(response));
}

std::string DescribeResponse(const HttpResponse& response) {
  std::string text = "HTTP " + std::to_string(response.status);
  std::string body = PrintablePrefix(response.body, kDescribedBodyBytes);
  // Trailing whitespace (usually a newline turned into a space) says nothing.
  while (!body.empty() && body.back() == ' ') body.pop_back();
  if (!body.empty()) text += ": " + body;
  return text;
}

std::string RedactUrl(const std::string& url) {
  std::size_t scheme = url.find("://");
  if (scheme == std::string::npos) return "<invalid URL>";
  std::size_t authority = scheme + 3;
  std::size_t end = url.find_first_of("/?#", authority);
  std::string host = url.substr(authority, end == std::string::npos ? end : end - authority);
  if (std::size_t at = host.rfind('@'); at != std::string::npos) host.erase(0, at + 1);
  std::string redacted = url.substr(0, authority) + host;
  if (end != std::string::npos && end + 1 < url.size()) redacted += "/…";
  return redacted;
}

std::string PrintablePrefix(const std::string& text, std::size_t max_bytes) {
  std::string out;
  for (std::size_t i = 0; i < text.size();) {
    std::size_t length = Utf8SequenceLength(text, i);
    std::size_t emitted = length == 0 ? 1 : length;
    if (out.size() + emitted > max_bytes) break;
    auto lead = static_cast<unsigned char>(text[i]);
    if (length == 0) {
      out += '?';
    } else if (lead < 0x20 || lead == 0x7F) {
      out += ' ';
    } else {
      out.append(text, i, length);
    }
    i += emitted;
  }
  return out;
}

}  // namespace devtime::collector::notify
