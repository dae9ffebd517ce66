#include "tests/support/delay_proxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <condition_variable>
#include <deque>
#include <stdexcept>

namespace devtime::testing {
namespace {

using Clock = std::chrono::steady_clock;

sockaddr_in Loopback(int port) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return address;
}

void NoDelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

bool WriteAll(int fd, const std::string& bytes) {
  std::size_t sent = 0;
  while (sent < bytes.size()) {
    ssize_t n = send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return false;
    sent += static_cast<std::size_t>(n);
  }
  return true;
}

}  // namespace

// Bytes read from `from` are queued with the time they are due, and written to `to` then:
// a reader thread and a writer thread, so that reading never waits for the delay.
class DelayProxy::Link {
 public:
  Link(int from, int to, std::chrono::milliseconds delay)
      : from_(from), to_(to), delay_(delay), reader_([this] { Read(); }), writer_([this] {
          Write();
        }) {}
  ~Link() {
    reader_.join();
    writer_.join();
  }

 private:
  struct Chunk {
    Clock::time_point due;
    std::string bytes;  // empty: the sender closed its side
  };

  void Read() {
    char buffer[1 << 14];
    while (true) {
      ssize_t n = recv(from_, buffer, sizeof buffer, 0);
      std::lock_guard<std::mutex> lock(mu_);
      queue_.push_back({Clock::now() + delay_, n > 0 ? std::string(buffer, n) : std::string()});
      ready_.notify_one();
      if (n <= 0) return;
    }
  }

  void Write() {
    while (true) {
      std::unique_lock<std::mutex> lock(mu_);
      ready_.wait(lock, [this] { return !queue_.empty(); });
      Chunk chunk = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      std::this_thread::sleep_until(chunk.due);  // the link's latency, the proxy's one job
      if (chunk.bytes.empty() || !WriteAll(to_, chunk.bytes)) {
        shutdown(to_, SHUT_WR);  // pass the close on
        return;
      }
    }
  }

  const int from_, to_;
  const std::chrono::milliseconds delay_;
  std::mutex mu_;
  std::condition_variable ready_;
  std::deque<Chunk> queue_;
  std::thread reader_, writer_;  // last: they use the members above
};

DelayProxy::DelayProxy(int target_port, std::chrono::milliseconds delay)
    : target_port_(target_port), delay_(delay) {
  listen_fd_ = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address = Loopback(0);
  socklen_t size = sizeof address;
  if (listen_fd_ < 0 || bind(listen_fd_, reinterpret_cast<sockaddr*>(&address), size) != 0 ||
      listen(listen_fd_, 16) != 0 ||
      getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&address), &size) != 0) {
    throw std::runtime_error("delay proxy: cannot listen on 127.0.0.1");
  }
  port_ = ntohs(address.sin_port);
  acceptor_ = std::thread([this] { AcceptLoop(); });
}

DelayProxy::~DelayProxy() {
  stopping_ = true;
  acceptor_.join();  // polls stopping_
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (int fd : sockets_) shutdown(fd, SHUT_RDWR);  // ends every reader, then its writer
  }
  links_.clear();  // joins
  for (int fd : sockets_) close(fd);
  close(listen_fd_);
}

void DelayProxy::AcceptLoop() {
  while (!stopping_) {
    pollfd ready{listen_fd_, POLLIN, 0};
    if (poll(&ready, 1, 50) <= 0) continue;  // wakes to see stopping_
    int client = accept(listen_fd_, nullptr, nullptr);
    if (client < 0) continue;
    int server = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in target = Loopback(target_port_);
    if (server < 0 || connect(server, reinterpret_cast<sockaddr*>(&target), sizeof target) != 0) {
      close(client);
      if (server >= 0) close(server);
      continue;  // the client sees its connection closed, as with a server that is down
    }
    NoDelay(client);
    NoDelay(server);
    std::lock_guard<std::mutex> lock(mu_);
    sockets_.insert(sockets_.end(), {client, server});
    links_.push_back(std::make_unique<Link>(client, server, delay_));
    links_.push_back(std::make_unique<Link>(server, client, delay_));
  }
}

}  // namespace devtime::testing
