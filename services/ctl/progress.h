// Progress of a long command (devtimectl import) on stderr: on a terminal one line redrawn in
// place — a bar, done/total, the rate and the time left — and otherwise (a CI log, a pipe) a
// plain line at every tenth of the work, so a log stays short and readable.
#pragma once

#include <chrono>
#include <cstddef>
#include <mutex>
#include <ostream>
#include <string>

namespace devtime::ctl {

// "[=========>          ]  120/500  34.2/s  ETA 0:11" for `done` of `total` after `elapsed`;
// the bar is `width` characters wide; ETA is left out until there is a rate.
std::string FormatProgress(std::size_t done, std::size_t total,
                           std::chrono::duration<double> elapsed, int width);

class Progress {
 public:
  // `terminal`: redraw in place (isatty(stderr)); else plain lines. `what`: the items' name.
  Progress(std::ostream& out, std::size_t total, bool terminal, std::string what);

  // One more item done. Thread-safe.
  void Advance();
  // Ends the line (terminal) or writes the last plain line if it was not written yet.
  void Finish();

 private:
  // With mutex_ held:
  void Draw();
  void WritePlainLine();
  std::chrono::duration<double> Elapsed() const;

  std::ostream& out_;
  const std::size_t total_;
  const bool terminal_;
  const std::string what_;
  const std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::mutex mutex_;
  std::size_t done_ = 0;
  std::size_t tenths_written_ = 0;  // plain mode: the last tenth of total_ a line was written at
};

}  // namespace devtime::ctl
