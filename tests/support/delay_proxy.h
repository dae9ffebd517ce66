// A TCP proxy on loopback that delivers every byte `delay` after it arrived, in each
// direction: a slow link (a VPN, another region) between a client and a server on this
// machine. Bytes keep their order; the proxy adds latency, never loss.
//
// Thread-safety: construct and destroy on one thread; the proxy serves on its own threads.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace devtime::testing {

class DelayProxy {
 public:
  // Listens on 127.0.0.1 (a free port) and forwards each connection to 127.0.0.1:`target_port`.
  DelayProxy(int target_port, std::chrono::milliseconds delay);
  ~DelayProxy();  // closes every connection and joins every thread
  DelayProxy(const DelayProxy&) = delete;
  DelayProxy& operator=(const DelayProxy&) = delete;

  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  class Link;  // one direction of one connection

  void AcceptLoop();

  const int target_port_;
  const std::chrono::milliseconds delay_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::mutex mu_;  // guards links_ and sockets_
  std::vector<std::unique_ptr<Link>> links_;
  std::vector<int> sockets_;
  std::thread acceptor_;
};

}  // namespace devtime::testing
