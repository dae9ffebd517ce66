#include "services/ctl/progress.h"

#include <algorithm>

#include "absl/strings/str_format.h"

namespace devtime::ctl {

std::string FormatProgress(std::size_t done, std::size_t total,
                           std::chrono::duration<double> elapsed, int width) {
  const double fraction = total == 0 ? 1.0 : static_cast<double>(done) / static_cast<double>(total);
  const int filled = std::clamp(static_cast<int>(fraction * width), 0, width);
  std::string bar(static_cast<std::size_t>(filled), '=');
  if (filled < width) bar += '>';
  bar.resize(static_cast<std::size_t>(width), ' ');
  std::string line = absl::StrFormat("[%s] %*d/%d", bar,
                                     static_cast<int>(std::to_string(total).size()), done, total);
  const double seconds = elapsed.count();
  if (done == 0 || seconds <= 0) return line;
  const double rate = static_cast<double>(done) / seconds;
  const auto left = static_cast<long>(static_cast<double>(total - done) / rate + 0.5);
  return line + absl::StrFormat("  %.1f/s  ETA %d:%02d", rate, left / 60, left % 60);
}

Progress::Progress(std::ostream& out, std::size_t total, bool terminal, std::string what)
    : out_(out), total_(total), terminal_(terminal), what_(std::move(what)) {}

void Progress::Advance() {
  std::lock_guard lock(mutex_);
  ++done_;
  Draw();
}

void Progress::Finish() {
  std::lock_guard lock(mutex_);
  if (terminal_) {
    out_ << "\n" << std::flush;
  } else if (tenths_written_ < 10) {
    WritePlainLine();
  }
}

void Progress::Draw() {
  if (terminal_) {
    out_ << "\r" << what_ << " " << FormatProgress(done_, total_, Elapsed(), 30) << std::flush;
    return;
  }
  const std::size_t tenths = total_ == 0 ? 10 : done_ * 10 / total_;
  if (tenths > tenths_written_) WritePlainLine();
}

void Progress::WritePlainLine() {
  tenths_written_ = total_ == 0 ? 10 : done_ * 10 / total_;
  out_ << what_ << " " << FormatProgress(done_, total_, Elapsed(), 20) << "\n" << std::flush;
}

std::chrono::duration<double> Progress::Elapsed() const {
  return std::chrono::steady_clock::now() - start_;
}

}  // namespace devtime::ctl
