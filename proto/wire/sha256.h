// SHA-256 through OpenSSL's EVP interface (the SHA256_* calls are deprecated in OpenSSL 3),
// for the content hashes devtime writes: `devtimectl import`'s run ids and the trace store's
// file hashes. Header-only: its users link OpenSSL::Crypto themselves.
#pragma once

#include <openssl/evp.h>

#include <array>
#include <cstddef>
#include <string>

namespace devtime::wire {

class Sha256 {
 public:
  Sha256() : context_(EVP_MD_CTX_new()) { EVP_DigestInit_ex(context_, EVP_sha256(), nullptr); }
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  ~Sha256() { EVP_MD_CTX_free(context_); }

  void Update(const void* data, std::size_t size) { EVP_DigestUpdate(context_, data, size); }
  std::array<unsigned char, 32> Final() {
    std::array<unsigned char, 32> digest{};
    EVP_DigestFinal_ex(context_, digest.data(), nullptr);
    return digest;
  }

 private:
  EVP_MD_CTX* context_;
};

// Lowercase hex of a digest, as sha256sum prints it.
inline std::string Hex(const std::array<unsigned char, 32>& digest) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned char byte : digest) {
    hex += kHex[byte >> 4];
    hex += kHex[byte & 0xf];
  }
  return hex;
}

}  // namespace devtime::wire
