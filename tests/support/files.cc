#include "tests/support/files.h"

#include <fstream>
#include <iterator>

namespace devtime::testing {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string WriteFile(const std::string& dir, const std::string& name, const std::string& content) {
  std::string path = dir + "/" + name;
  std::ofstream(path) << content;
  return path;
}

}  // namespace devtime::testing
