#include "agents/trace/io/file_reader.h"

#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <system_error>

#include "absl/status/status.h"
#include "agents/trace/io/byte_source.h"

namespace devtime::trace {
namespace {

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};

absl::Status Gunzip(const std::filesystem::path& path, const std::string& in, size_t in_size,
                    std::string* out, size_t* out_size) {
  z_stream zs{};
  if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) {
    return absl::InternalError(path.string() + ": cannot initialise zlib");
  }
  std::string buf;
  buf.resize(in_size * 4 + 4096);
  size_t produced = 0;
  size_t consumed = 0;
  stream::GunzipBudget budget;
  int rc = Z_OK;
  while (true) {
    if (produced == buf.size()) buf.resize(buf.size() * 2);
    const size_t in_chunk = std::min<size_t>(in_size - consumed, 1u << 30);
    // At most one GzipInput chunk per call, so that the budget is checked that often.
    const size_t out_chunk = std::min(buf.size() - produced, stream::GzipInput::kChunk);
    zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data() + consumed));
    zs.avail_in = static_cast<uInt>(in_chunk);
    zs.next_out = reinterpret_cast<Bytef*>(buf.data() + produced);
    zs.avail_out = static_cast<uInt>(out_chunk);
    rc = inflate(&zs, Z_NO_FLUSH);
    consumed += in_chunk - zs.avail_in;
    produced += out_chunk - zs.avail_out;
    if (std::string over = budget.Add(in_chunk - zs.avail_in, out_chunk - zs.avail_out);
        !over.empty()) {
      inflateEnd(&zs);
      return absl::InvalidArgumentError(path.string() + ": " + over);
    }
    if (rc == Z_STREAM_END) {
      // Concatenated gzip members (gzip allows them): continue with the next one.
      if (consumed < in_size) {
        if (inflateReset(&zs) != Z_OK) break;
        continue;
      }
      break;
    }
    if (rc != Z_OK && rc != Z_BUF_ERROR) break;
    if (rc == Z_BUF_ERROR && consumed == in_size && zs.avail_out != 0) break;  // truncated
  }
  inflateEnd(&zs);
  if (rc != Z_STREAM_END) {
    return absl::InvalidArgumentError(
        path.string() + ": gzip stream is " +
        (rc == Z_BUF_ERROR ? std::string("truncated (the writer may still be running)")
                           : std::string("corrupt: ") + (zs.msg ? zs.msg : "zlib error")));
  }
  *out_size = produced;
  buf.resize(produced);
  *out = std::move(buf);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<FileContent> ReadFileContent(const std::filesystem::path& path, size_t padding) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    return absl::NotFoundError(path.string() + ": no such file");
  }
  if (!std::filesystem::is_regular_file(path, ec)) {
    return absl::InvalidArgumentError(path.string() + ": not a regular file");
  }
  std::unique_ptr<std::FILE, FileCloser> f(std::fopen(path.c_str(), "rb"));
  if (!f) {
    return absl::PermissionDeniedError(path.string() + ": cannot open: " + std::strerror(errno));
  }
  FileContent content;
  const uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec) return absl::InternalError(path.string() + ": cannot stat: " + ec.message());
  content.file_bytes = size;
  std::string raw;
  raw.resize(static_cast<size_t>(size) + padding);
  size_t got = 0;
  while (got < size) {
    const size_t n = std::fread(raw.data() + got, 1, static_cast<size_t>(size) - got, f.get());
    if (n == 0) break;
    got += n;
  }
  if (got != size) {
    return absl::DataLossError(path.string() + ": short read (" + std::to_string(got) + " of " +
                               std::to_string(size) + " bytes)");
  }
  if (size >= 2 && static_cast<unsigned char>(raw[0]) == 0x1f &&
      static_cast<unsigned char>(raw[1]) == 0x8b) {
    content.gzipped = true;
    std::string out;
    size_t out_size = 0;
    absl::Status st = Gunzip(path, raw, got, &out, &out_size);
    if (!st.ok()) return st;
    raw.clear();
    raw.shrink_to_fit();
    out.resize(out_size + padding);
    content.buffer = std::move(out);
    content.size = out_size;
    return content;
  }
  content.buffer = std::move(raw);
  content.size = got;
  return content;
}

}  // namespace devtime::trace
