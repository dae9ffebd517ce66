#include "services/collector/rpc/front_door.h"

#include <dirent.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <iostream>
#include <string_view>
#include <vector>

#include "absl/strings/numbers.h"
#include "grpcpp/server_posix.h"

namespace devtime::collector {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::string_view kHttp2Preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
// How long accepting pauses when the descriptor table is full; short, so that serving resumes
// soon after descriptors come free, long enough not to spin.
constexpr auto kFullPause = std::chrono::milliseconds(50);

int OpenDescriptors() {
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return 0;
  int n = 0;
  while (readdir(dir) != nullptr) ++n;
  closedir(dir);
  return n - 3;  // ".", ".." and the directory's own descriptor
}

long SoftFileLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return 1 << 20;
  return static_cast<long>(limit.rlim_cur);
}

// "host:port", "[v6]:port" or ":port" into getaddrinfo's parts.
absl::StatusOr<std::pair<std::string, std::string>> SplitAddress(const std::string& address) {
  auto colon = address.rfind(':');
  int port = 0;
  if (colon == std::string::npos || !absl::SimpleAtoi(address.substr(colon + 1), &port) ||
      port < 0 || port > 65535) {
    return absl::InvalidArgumentError("--listen " + address + ": expected host:port");
  }
  std::string host = address.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  return std::pair{host, address.substr(colon + 1)};
}

absl::StatusOr<int> BindAndListen(const std::string& address) {
  auto parts = SplitAddress(address);
  if (!parts.ok()) return parts.status();
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  const char* host = parts->first.empty() ? nullptr : parts->first.c_str();
  if (int rc = getaddrinfo(host, parts->second.c_str(), &hints, &found); rc != 0) {
    return absl::InvalidArgumentError("--listen " + address + ": " + gai_strerror(rc));
  }
  std::string error = "no address";
  int fd = -1;
  for (addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);  // restart over TIME_WAIT
    if (bind(fd, a->ai_addr, a->ai_addrlen) != 0 || listen(fd, SOMAXCONN) != 0) {
      error = std::strerror(errno);
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(found);
  if (fd < 0) return absl::UnavailableError("cannot serve gRPC on " + address + ": " + error);
  return fd;
}

int BoundPort(int fd) {
  sockaddr_storage bound{};
  socklen_t size = sizeof bound;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &size) != 0) return 0;
  if (bound.ss_family == AF_INET6) {
    return ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port);
  }
  return ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
}

enum class FirstBytes { kNone, kPreface, kOther };

// What a waiting connection has sent, without taking it from the socket (gRPC reads it).
FirstBytes Peek(int fd) {
  char buffer[kHttp2Preface.size()];
  ssize_t n = recv(fd, buffer, sizeof buffer, MSG_PEEK);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
    return FirstBytes::kNone;
  if (n <= 0) return FirstBytes::kOther;  // closed or failed
  return kHttp2Preface.starts_with(std::string_view(buffer, static_cast<size_t>(n)))
             ? FirstBytes::kPreface
             : FirstBytes::kOther;
}

// Says once when accepting pauses and once when it resumes, with what was waiting.
class PauseLog {
 public:
  void Paused(const char* why) {
    if (paused_) return;
    paused_ = true;
    since_ = Clock::now();
    std::cerr << "devtime-collector: gRPC accepting paused: " << why << std::endl;
  }
  void Resumed() {
    if (!paused_) return;
    paused_ = false;
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - since_);
    std::cerr << "devtime-collector: gRPC accepting again after " << ms.count() << " ms"
              << std::endl;
  }

 private:
  bool paused_ = false;
  Clock::time_point since_{};
};

}  // namespace

long RaiseFileLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return -1;
  if (limit.rlim_cur != limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    (void)setrlimit(RLIMIT_NOFILE, &limit);  // on failure the soft limit stays, and is reported
  }
  return SoftFileLimit();
}

absl::StatusOr<std::unique_ptr<FrontDoor>> FrontDoor::Listen(const std::string& address,
                                                             const FrontDoorOptions& options) {
  auto fd = BindAndListen(address);
  if (!fd.ok()) return fd.status();
  std::unique_ptr<FrontDoor> door(new FrontDoor());
  door->listen_fd_ = *fd;
  door->port_ = BoundPort(*fd);
  door->options_ = options;
  door->wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (door->wake_fd_ < 0) return absl::InternalError("eventfd: " + std::string(strerror(errno)));
  return door;
}

FrontDoor::~FrontDoor() {
  Stop();
  if (wake_fd_ >= 0) close(wake_fd_);
}

void FrontDoor::Serve(grpc::Server* server) {
  thread_ = std::thread([this, server] { Loop(server); });
}

void FrontDoor::Stop() {
  if (thread_.joinable()) {
    uint64_t one = 1;
    (void)!write(wake_fd_, &one, sizeof one);
    thread_.join();
  }
  if (listen_fd_ >= 0) close(listen_fd_);
  listen_fd_ = -1;
}

void FrontDoor::Loop(grpc::Server* server) {
  struct Waiting {
    int fd;
    Clock::time_point since;
  };
  std::deque<Waiting> waiting;
  Clock::time_point paused_until{};
  PauseLog log;
  std::vector<pollfd> polled;
  while (true) {
    long limit = SoftFileLimit();
    long headroom = options_.headroom > 0 ? options_.headroom : std::max(32L, limit / 8);
    size_t max_waiting = options_.max_waiting > 0 ? static_cast<size_t>(options_.max_waiting)
                                                  : static_cast<size_t>(std::max(8L, limit / 4));
    auto now = Clock::now();
    bool accepting = now >= paused_until;
    // ---- wait: for Stop, a connection, a waiting connection's bytes, or a deadline ----
    polled.assign({{wake_fd_, POLLIN, 0}, {accepting ? listen_fd_ : -1, POLLIN, 0}});
    auto wake = accepting ? now + std::chrono::seconds(1) : paused_until;
    for (const Waiting& w : waiting) {
      polled.push_back({w.fd, POLLIN, 0});
      wake = std::min(wake, w.since + options_.preface_timeout);
    }
    auto timeout = std::chrono::duration_cast<std::chrono::milliseconds>(wake - now).count();
    if (poll(polled.data(), polled.size(), static_cast<int>(std::max<long>(timeout, 0) + 1)) < 0 &&
        errno != EINTR) {
      std::cerr << "devtime-collector: poll: " << strerror(errno) << std::endl;
    }
    if (polled[0].revents != 0) break;
    now = Clock::now();
    // ---- waiting connections: handed to gRPC once they speak HTTP/2, else closed ----
    std::deque<Waiting> still;
    for (size_t i = 0; i < waiting.size(); ++i) {
      const Waiting& w = waiting[i];
      FirstBytes bytes = polled[2 + i].revents != 0 ? Peek(w.fd) : FirstBytes::kNone;
      if (bytes == FirstBytes::kPreface) {
        int one = 1;
        setsockopt(w.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        grpc::AddInsecureChannelFromFd(server, w.fd);  // gRPC owns and closes it now
      } else if (bytes == FirstBytes::kOther || now - w.since >= options_.preface_timeout) {
        close(w.fd);
      } else {
        still.push_back(w);
      }
    }
    waiting.swap(still);
    // ---- accept while the descriptor table has room ----
    if (!accepting || (polled[1].revents & POLLIN) == 0) continue;
    long room = limit - headroom - OpenDescriptors();
    if (room <= 0) {
      log.Paused("open descriptors at the limit less headroom; waiting for some to close");
      paused_until = now + kFullPause;
      continue;
    }
    for (; room > 0; --room) {
      int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) {  // EMFILE and the like: retried, not fatal
          log.Paused(strerror(errno));
          paused_until = now + kFullPause;
        }
        break;
      }
      log.Resumed();
      if (waiting.size() >= max_waiting) {  // the longest silent one makes room
        close(waiting.front().fd);
        waiting.pop_front();
      }
      waiting.push_back({fd, now});
    }
  }
  for (const Waiting& w : waiting) close(w.fd);
}

}  // namespace devtime::collector
