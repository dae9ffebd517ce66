#include "agents/daemon/spawn.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "tests/support/process.h"

namespace devtime::agent {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

std::string Read(const fs::path& path) {
  std::ifstream in(path);
  std::ostringstream content;
  content << in.rdbuf();
  return content.str();
}

// Blocks until the child ends; its exit code (-1 if a signal ended it).
int WaitFor(pid_t pid) {
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

class SpawnTest : public ::testing::Test {
 protected:
  SpawnSpec Shell(const std::string& script) {
    SpawnSpec spec;
    spec.argv = {"/bin/sh", "-c", script};
    spec.stdout_path = dir_ / "out";
    spec.stderr_path = dir_ / "err";
    return spec;
  }
  fs::path dir_ = devtime::testing::MakeTempDir("spawn");
};

TEST_F(SpawnTest, SendsStdoutAndStderrToTheirFilesAndStdinFromDevNull) {
  auto pid = Spawn(Shell("echo to-out; echo to-err >&2; cat; exit 7"));
  ASSERT_TRUE(pid.ok()) << pid.status();
  EXPECT_EQ(WaitFor(*pid), 7);  // `cat` ended at once: stdin is empty
  EXPECT_EQ(Read(dir_ / "out"), "to-out\n");
  EXPECT_EQ(Read(dir_ / "err"), "to-err\n");
}

TEST_F(SpawnTest, AppendsUnlessAskedToTruncate) {
  ASSERT_EQ(WaitFor(*Spawn(Shell("echo first"))), 0);
  ASSERT_EQ(WaitFor(*Spawn(Shell("echo second"))), 0);
  EXPECT_EQ(Read(dir_ / "out"), "first\nsecond\n");
  auto truncating = Shell("echo third");
  truncating.truncate_output = true;
  ASSERT_EQ(WaitFor(*Spawn(truncating)), 0);
  EXPECT_EQ(Read(dir_ / "out"), "third\n");
}

TEST_F(SpawnTest, CanShareOneFileForBothStreams) {
  auto spec = Shell("echo a; echo b >&2");
  spec.stderr_path = spec.stdout_path;
  ASSERT_EQ(WaitFor(*Spawn(spec)), 0);
  EXPECT_EQ(Read(dir_ / "out"), "a\nb\n");
}

TEST_F(SpawnTest, RunsInItsWorkDirWithItsEnvironment) {
  fs::create_directories(dir_ / "work");
  auto spec = Shell("pwd; echo \"[$ONLY][$HOME]\"");
  spec.work_dir = dir_ / "work";
  spec.env = std::vector<std::string>{"ONLY=this"};
  ASSERT_EQ(WaitFor(*Spawn(spec)), 0);
  EXPECT_EQ(Read(dir_ / "out"), (dir_ / "work").string() + "\n[this][]\n");
}

TEST_F(SpawnTest, InheritsThisProcessEnvironmentByDefault) {
  setenv("DEVTIME_SPAWN_TEST", "inherited", 1);
  ASSERT_EQ(WaitFor(*Spawn(Shell("echo $DEVTIME_SPAWN_TEST"))), 0);
  unsetenv("DEVTIME_SPAWN_TEST");
  EXPECT_EQ(Read(dir_ / "out"), "inherited\n");
}

TEST_F(SpawnTest, LeadsItsOwnProcessGroupOnlyWhenAsked) {
  auto spec = Shell("ps -o pgid= -p $$");
  spec.own_process_group = true;
  auto leader = Spawn(spec);
  ASSERT_TRUE(leader.ok()) << leader.status();
  ASSERT_EQ(WaitFor(*leader), 0);
  EXPECT_EQ(std::stoi(Read(dir_ / "out")), *leader);

  spec.own_process_group = false;
  spec.truncate_output = true;
  ASSERT_EQ(WaitFor(*Spawn(spec)), 0);
  EXPECT_EQ(std::stoi(Read(dir_ / "out")), getpgrp());  // this test's group
}

TEST_F(SpawnTest, LooksUpABareProgramNameOnThePath) {
  SpawnSpec spec = Shell("");
  spec.argv = {"sh", "-c", "echo found"};
  ASSERT_EQ(WaitFor(*Spawn(spec)), 0);
  EXPECT_EQ(Read(dir_ / "out"), "found\n");
}

TEST_F(SpawnTest, SaysWhyAProgramCannotStart) {
  SpawnSpec spec = Shell("");
  spec.argv = {"/nonexistent/program"};
  auto pid = Spawn(spec);
  ASSERT_FALSE(pid.ok());
  EXPECT_EQ(pid.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(pid.status().message(), HasSubstr("No such file or directory"));
  EXPECT_FALSE(Spawn(SpawnSpec{}).ok());  // no program at all
}

}  // namespace
}  // namespace devtime::agent
