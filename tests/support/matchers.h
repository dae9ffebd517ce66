// gMock matchers the tests share.
#pragma once

#include <gmock/gmock.h>

#include <string>
#include <vector>

namespace devtime::testing {

// Matches a text that contains every one of `parts` (e.g. the series a /metrics page must
// show); a mismatch prints the text once and the parts it looked for.
inline ::testing::Matcher<const std::string&> ContainsEach(const std::vector<std::string>& parts) {
  std::vector<::testing::Matcher<const std::string&>> each;
  for (const auto& part : parts) each.push_back(::testing::HasSubstr(part));
  return ::testing::AllOfArray(each);
}

}  // namespace devtime::testing
