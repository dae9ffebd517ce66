// Durable writes (files.h): a full disk is told apart from other failures, and a failed
// replacement leaves the old file and no temporary file behind.
#include "agents/daemon/files.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/support/fake_env.h"
#include "tests/support/process.h"

namespace devtime::agent {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

TEST(PosixEnv, AFullDiskIsResourceExhausted) {
  // /dev/full answers every write with ENOSPC, as a full filesystem does.
  absl::Status written = wire::Env::Default()->WriteFile("/dev/full", "a run");
  EXPECT_EQ(written.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(written.message()), HasSubstr("cannot write /dev/full"));
}

TEST(ReplaceFileDurably, AFailedWriteKeepsTheOldFileAndLeavesNoTemporaryFile) {
  const fs::path dir = devtime::testing::MakeTempDir("files");
  ASSERT_TRUE(ReplaceFileDurably(dir / "state.pb", "old").ok());
  devtime::testing::FakeEnv full_disk;  // leaves the zero-byte file a real ENOSPC leaves
  full_disk.Inject(devtime::testing::FakeEnv::Fault::kNoSpace, dir);
  EXPECT_EQ(ReplaceFileDurably(dir / "state.pb", "new", full_disk).code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(ReadWholeFile(dir / "state.pb"), "old");
  EXPECT_FALSE(fs::exists(dir / "state.pb.tmp"));
}

TEST(RemoveTempFiles, RemovesOnlyTemporaryFiles) {
  const fs::path dir = devtime::testing::MakeTempDir("files");
  std::ofstream(dir / "a.pb.tmp") << "partial";
  std::ofstream(dir / "a.pb") << "whole";
  EXPECT_EQ(RemoveTempFiles(dir), 1);
  EXPECT_FALSE(fs::exists(dir / "a.pb.tmp"));
  EXPECT_TRUE(fs::exists(dir / "a.pb"));
}

}  // namespace
}  // namespace devtime::agent
