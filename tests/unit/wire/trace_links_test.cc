// How each kind of trace file is opened (trace_links.h): Kineto JSON and .pftrace in the
// Perfetto UI, Neuron captures in Neuron Explorer on their session directory.
#include "proto/wire/trace_links.h"

#include <gtest/gtest.h>

namespace devtime::wire {
namespace {

v1::Artifact File(const std::string& kind, const std::string& uri) {
  v1::Artifact artifact;
  artifact.set_kind(kind);
  artifact.set_uri(uri);
  return artifact;
}

TEST(OpenWith, KinetoTracesAndPftraceFilesOpenInThePerfettoUi) {
  for (const auto& artifact : {File("framework_trace", "file:///k/trace.json.gz"),
                               File("system_trace_json", "file:///k/system_profile.pftrace")}) {
    const TraceOpening opening = OpenWith(artifact);
    EXPECT_EQ(opening.viewer, "Perfetto UI");
    EXPECT_EQ(opening.command, "trace_processor --httpd " + ShellQuote(LocalPath(artifact.uri())));
    EXPECT_EQ(opening.then,
              "then open https://ui.perfetto.dev; or, without trace_processor (not packaged in "
              "Debian), load the file in https://ui.perfetto.dev directly (Open trace file)");
  }
}

TEST(OpenWith, NeuronFilesOpenTheirSessionDirectoryInNeuronExplorer) {
  EXPECT_EQ(OpenWith(File("ntff", "file:///k/i-0_pid_7/a.ntff")).command,
            "neuron-explorer view -d '/k/i-0_pid_7'");
  EXPECT_EQ(OpenWith(File("neff", "file:///k/s/neffs/graph_1.neff")).target, "/k/s");
  EXPECT_EQ(OpenWith(File("system_trace", "file:///k/s/ntrace.pb")).viewer, "Neuron Explorer");
}

TEST(OpenWith, ARemoteFileHasNoCommandButSaysWhatToDo) {
  const TraceOpening opening = OpenWith(File("framework_trace", "s3://b/trace.json"));
  EXPECT_EQ(opening.command, "");
  EXPECT_EQ(opening.target, "s3://b/trace.json");
  EXPECT_EQ(opening.then, "fetch it, then load it in https://ui.perfetto.dev");
}

TEST(TraceFiles, KeepsOnlyWhatAViewerOpens) {
  google::protobuf::RepeatedPtrField<v1::Artifact> artifacts;
  for (const char* kind : {"framework_trace", "key_averages", "environment", "ntff", "cpu_util"}) {
    *artifacts.Add() = File(kind, std::string("file:///k/") + kind);
  }
  const auto traces = TraceFiles(artifacts);
  ASSERT_EQ(traces.size(), 2);
  EXPECT_EQ(traces[0].kind(), "framework_trace");
  EXPECT_EQ(traces[1].kind(), "ntff");
}

TEST(OpeningLines, OneLinePerSessionAndPerFile) {
  google::protobuf::RepeatedPtrField<v1::Artifact> traces;
  *traces.Add() = File("ntff", "file:///k/s/a.ntff");
  *traces.Add() = File("neff", "file:///k/s/a.neff");
  *traces.Add() = File("framework_trace", "s3://b/t.json");
  const auto lines = OpeningLines(traces);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], "Neuron Explorer: neuron-explorer view -d '/k/s'");
  EXPECT_EQ(lines[1],
            "Perfetto UI: s3://b/t.json (fetch it, then load it in https://ui.perfetto.dev)");
}

TEST(ShellQuote, QuotesSingleQuotes) { EXPECT_EQ(ShellQuote("it's"), "'it'\\''s'"); }

}  // namespace
}  // namespace devtime::wire
