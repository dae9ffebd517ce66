#include "services/ctl/table.h"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

namespace devtime::ctl {
namespace {

// Display width in terminal columns: counts UTF-8 lead bytes, not continuation bytes.
std::size_t DisplayWidth(const std::string& text) {
  return static_cast<std::size_t>(std::count_if(text.begin(), text.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xc0) != 0x80;
  }));
}

}  // namespace

TextTable::TextTable(std::vector<std::string> headers, std::vector<Align> align)
    : headers_(std::move(headers)), align_(std::move(align)) {
  align_.resize(headers_.size(), Align::kLeft);
}

void TextTable::AddRow(std::vector<std::string> cells) {
  if (cells.size() != headers_.size()) throw std::logic_error("TextTable: wrong number of cells");
  rows_.push_back(std::move(cells));
}

std::string TextTable::Render() const {
  std::vector<std::size_t> width(headers_.size());
  for (std::size_t c = 0; c < headers_.size(); ++c) width[c] = DisplayWidth(headers_[c]);
  for (const auto& row : rows_) {
    for (std::size_t c = 0; c < row.size(); ++c)
      width[c] = std::max(width[c], DisplayWidth(row[c]));
  }
  std::string out;
  auto append_row = [&](const std::vector<std::string>& row) {
    for (std::size_t c = 0; c < row.size(); ++c) {
      std::string pad(width[c] - DisplayWidth(row[c]), ' ');
      if (c) out += "  ";
      if (align_[c] == Align::kRight) {
        out += pad + row[c];
      } else if (c + 1 < row.size()) {
        out += row[c] + pad;
      } else {
        out += row[c];  // no trailing spaces on the last column
      }
    }
    out += '\n';
  };
  append_row(headers_);
  for (const auto& row : rows_) append_row(row);
  return out;
}

std::string FormatPercent(double fraction) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.1f%%", fraction * 100);
  return buffer;
}

}  // namespace devtime::ctl
