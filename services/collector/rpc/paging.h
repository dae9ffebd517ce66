// devtime::collector — server-side pages of the list calls (ListRuns, ListJobs, JobHistory,
// ListRegressions; the contract is in collector.proto).
//
// A page holds at most its page size of items and at most kMaxPageBytes of them (but always
// one, and a single item is far smaller than a client's receive limit), so whatever a list
// stores it can answer. Pages are keyset pages: the token names the last item given (its
// sort keys), and the next page starts after it in the list's order, so items stored
// between two calls never repeat one already given, and tokens survive restarts and work
// on every collector of a tier.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/repeated_ptr_field.h"
#include "google/protobuf/timestamp.pb.h"
#include "grpcpp/grpcpp.h"
#include "services/collector/rpc/status.h"

namespace devtime::collector {

inline constexpr unsigned kDefaultPageSize = 100;
inline constexpr unsigned kMaxPageSize = 10'000;
inline constexpr std::size_t kMaxPageBytes = 4 * 1024 * 1024;

// Where a page starts: after the item with these sort keys (a time, in microseconds since
// the epoch, and a text key; lists sorted by one key leave `micros` 0).
struct PageKey {
  int64_t micros = 0;
  std::string key;
};

struct Page {
  absl::string_view list;        // which list ("runs", "jobs", ...): its tokens name it
  unsigned size;                 // items at most
  std::optional<PageKey> after;  // nullopt = the first page
};

// The page a request of list `list` ("runs", "jobs", ...) asks for: page_size 0 =
// `default_size`; INVALID_ARGUMENT naming page_size above kMaxPageSize, or page_token for a
// token this list did not make.
absl::StatusOr<Page> ParsePage(absl::string_view list, uint32_t page_size,
                               const std::string& page_token,
                               unsigned default_size = kDefaultPageSize);

// The token naming `after` in list `list`.
std::string PageToken(absl::string_view list, const PageKey& after);

int64_t ToMicros(const google::protobuf::Timestamp& t);

// The list handlers' one shape: `caller` authenticated (status.h's Serve), the page that
// `request` (any of the paged requests) asks for, then body(page).
template <typename Caller, typename Request, typename Body>
grpc::Status ServeList(const absl::StatusOr<Caller>& caller, absl::string_view list,
                       const Request& request, Body&& body,
                       unsigned default_size = kDefaultPageSize) {
  return Serve(caller, [&](const Caller&) -> absl::Status {
    auto page = ParsePage(list, request.page_size(), request.page_token(), default_size);
    if (!page.ok()) return page.status();
    return body(*page);
  });
}

// Moves `page` out of `items` (the store's rows in list order; the store is asked for
// page.size + 1 so that a further row says more follow) into `out`: at most page.size items
// and kMaxPageBytes. Sets `*next_token` from key_of(last item given) when items remain.
template <typename T, typename KeyOf>
absl::Status FillPage(absl::StatusOr<std::vector<T>> items, const Page& page, KeyOf key_of,
                      google::protobuf::RepeatedPtrField<T>* out, std::string* next_token) {
  if (!items.ok()) return items.status();
  std::size_t bytes = 0;
  std::size_t given = 0;
  for (T& item : *items) {
    if (given == page.size) break;
    bytes += item.ByteSizeLong();
    if (given > 0 && bytes > kMaxPageBytes) break;
    *out->Add() = std::move(item);
    ++given;
  }
  if (given < items->size()) {
    *next_token = PageToken(page.list, key_of(out->at(out->size() - 1)));
  }
  return absl::OkStatus();
}

}  // namespace devtime::collector
