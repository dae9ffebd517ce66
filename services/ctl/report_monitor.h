// The report's "between the nights" part (issue 24): the model's newest neuron-monitor
// windows (runs list --source monitor), as text and as an HTML section.
#pragma once

#include <string>
#include <vector>

#include "devtime/v1/collector.pb.h"

namespace devtime::ctl {

inline constexpr unsigned kReportMonitorWindows = 48;  // two days of hourly windows

std::string RenderMonitorText(const std::vector<v1::RunInfo>& windows);
std::string RenderMonitorHtml(const std::vector<v1::RunInfo>& windows);

}  // namespace devtime::ctl
