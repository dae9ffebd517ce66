// Plain-text tables for terminal output: columns sized to their widest cell, numbers
// right-aligned.
#pragma once

#include <string>
#include <vector>

#include "proto/wire/change.h"

namespace devtime::ctl {

class TextTable {
 public:
  enum class Align { kLeft, kRight };

  // One header per column; `align` defaults to left for every column.
  explicit TextTable(std::vector<std::string> headers, std::vector<Align> align = {});

  void AddRow(std::vector<std::string> cells);  // exactly one cell per column
  std::string Render() const;
  bool empty() const { return rows_.empty(); }

 private:
  std::vector<std::string> headers_;
  std::vector<Align> align_;
  std::vector<std::vector<std::string>> rows_;
};

// Times and changes as every devtime table writes them (proto/wire/change.h): "403.3 µs",
// "2.355 ms", "+482.0 %". TextTable counts display columns, so "µs" aligns.
using wire::FormatChange;
using wire::FormatFraction;
using wire::ScaledTime;
using wire::SignedTime;

// A share of a whole: "49.5%".
std::string FormatPercent(double fraction);

}  // namespace devtime::ctl
