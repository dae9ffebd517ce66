#include "services/collector/rpc/paging.h"

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace devtime::collector {

// The token: web-safe base64 of "list\nmicros\nkey". The key may hold any byte but a newline
// cannot occur before it, so splitting at the first two is exact.
std::string PageToken(absl::string_view list, const PageKey& after) {
  return absl::WebSafeBase64Escape(absl::StrCat(list, "\n", after.micros, "\n", after.key));
}

absl::StatusOr<Page> ParsePage(absl::string_view list, uint32_t page_size,
                               const std::string& page_token, unsigned default_size) {
  if (page_size > kMaxPageSize) {
    return absl::InvalidArgumentError(
        absl::StrCat("page_size: ", page_size, ", at most ", kMaxPageSize));
  }
  Page page{.list = list, .size = page_size == 0 ? default_size : page_size};
  if (page_token.empty()) return page;
  std::string text;
  std::vector<absl::string_view> parts;
  if (absl::WebSafeBase64Unescape(page_token, &text)) {
    parts = absl::StrSplit(text, absl::MaxSplits('\n', 2));
  }
  PageKey key;
  if (parts.size() != 3 || parts[0] != list || !absl::SimpleAtoi(parts[1], &key.micros)) {
    return absl::InvalidArgumentError(
        absl::StrCat("page_token: not a token of this list (", list,
                     "); pass back next_page_token as it came, with the same filters"));
  }
  key.key = std::string(parts[2]);
  page.after = std::move(key);
  return page;
}

int64_t ToMicros(const google::protobuf::Timestamp& t) {
  return t.seconds() * 1'000'000 + t.nanos() / 1'000;
}

}  // namespace devtime::collector
