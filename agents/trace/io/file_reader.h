// Reads a whole file into memory, gunzipping it when it starts with the gzip magic bytes
// 1f 8b (whatever its name), and leaves zeroed padding after the content so that simdjson
// can parse the buffer in place.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>

#include "absl/status/statusor.h"

namespace devtime::trace {

struct FileContent {
  std::string buffer;  // content followed by `padding` zero bytes
  size_t size = 0;     // content bytes
  bool gzipped = false;
  uint64_t file_bytes = 0;  // on-disk size
};

// kNotFound when the path does not exist; kInvalidArgument for a truncated or corrupt gzip
// stream; the message names the file.
absl::StatusOr<FileContent> ReadFileContent(const std::filesystem::path& path, size_t padding);

}  // namespace devtime::trace
