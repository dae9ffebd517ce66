#include "services/ctl/table.h"

#include <gtest/gtest.h>

namespace devtime::ctl {
namespace {

TEST(TextTable, SizesColumnsToWidestCellAndRightAlignsNumbers) {
  TextTable table({"operator", "us"}, {TextTable::Align::kLeft, TextTable::Align::kRight});
  table.AddRow({"aten::mul", "1164.5"});
  table.AddRow({"aten::add", "9.0"});
  EXPECT_EQ(table.Render(),
            "operator       us\n"
            "aten::mul  1164.5\n"
            "aten::add     9.0\n");
}

TEST(TextTable, CountsUtf8CharactersNotBytes) {
  TextTable table({"a", "b"});
  table.AddRow({"µs", "x"});
  EXPECT_EQ(table.Render(), "a   b\nµs  x\n");
}

TEST(TextTable, RefusesRowsOfTheWrongWidth) {
  TextTable table({"a", "b"});
  EXPECT_THROW(table.AddRow({"only one"}), std::logic_error);
}

TEST(Format, TimesAreScaledSharesArePercents) {
  EXPECT_EQ(ScaledTime(1164.54), "1.165 ms");
  EXPECT_EQ(FormatPercent(0.4945), "49.5%");
}

}  // namespace
}  // namespace devtime::ctl
