// The process's shared epoll watcher of connections, and the thread-per-watch fallback.
#include "src/server/disconnect_watch.h"

#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <map>
#include <mutex>

namespace sbx::server {
namespace {

// One thread in epoll_wait over every watched connection (EPOLLRDHUP only: a pipelined next
// request, EPOLLIN, is not a disconnect). It lives until the process exits.
class Watcher {
 public:
  static Watcher& Get() {
    static Watcher* watcher = new Watcher();  // never destroyed: its thread runs to the end
    return *watcher;
  }

  // The watch's id, or 0 if the socket could not be added (the caller falls back).
  uint64_t Add(int fd, std::function<void()> callback) {
    if (!epoll_) return 0;
    std::lock_guard lock(mutex_);
    const uint64_t id = next_id_++;
    epoll_event event{};
    event.events = EPOLLRDHUP | EPOLLONESHOT;
    event.data.u64 = id;
    if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd, &event) != 0) return 0;
    watches_.emplace(id, Watch{fd, std::move(callback)});
    return id;
  }

  // Stops watching; returns after a callback of this watch that is running has returned.
  void Remove(uint64_t id) {
    std::unique_lock lock(mutex_);
    auto it = watches_.find(id);
    ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, it->second.fd, nullptr);
    watches_.erase(it);
    done_.wait(lock, [&] { return running_ != id; });
  }

 private:
  struct Watch {
    int fd;
    std::function<void()> callback;
  };

  Watcher() : epoll_(::epoll_create1(EPOLL_CLOEXEC)) {
    if (epoll_) std::thread([this] { Loop(); }).detach();
  }

  void Loop() {
    epoll_event events[16];
    while (true) {
      int ready = ::epoll_wait(epoll_.get(), events, 16, -1);
      for (int i = 0; i < ready; ++i) {
        const uint64_t id = events[i].data.u64;
        std::function<void()> callback;
        {
          std::lock_guard lock(mutex_);
          auto it = watches_.find(id);
          if (it == watches_.end()) continue;  // removed since: the request has finished
          if ((events[i].events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) == 0) continue;
          callback = it->second.callback;
          running_ = id;
        }
        callback();
        std::lock_guard lock(mutex_);
        running_ = 0;
        done_.notify_all();
      }
    }
  }

  UniqueFd epoll_;
  std::mutex mutex_;
  std::condition_variable done_;
  std::map<uint64_t, Watch> watches_;
  uint64_t next_id_ = 1;
  uint64_t running_ = 0;  // the watch whose callback runs now
};

}  // namespace

DisconnectWatch::DisconnectWatch(int connection_fd, std::function<void()> on_disconnect) {
  id_ = Watcher::Get().Add(connection_fd, on_disconnect);
  if (id_ != 0) return;
  stop_ = UniqueFd(::eventfd(0, EFD_CLOEXEC));
  int stop = stop_.get();
  thread_ = std::thread([connection_fd, stop, on_disconnect = std::move(on_disconnect)] {
    pollfd fds[2] = {{connection_fd, POLLRDHUP, 0}, {stop, POLLIN, 0}};
    while (::poll(fds, 2, -1) < 0 && errno == EINTR) {
    }
    if (fds[1].revents != 0) return;
    if (fds[0].revents & (POLLRDHUP | POLLHUP | POLLERR)) on_disconnect();
  });
}

DisconnectWatch::~DisconnectWatch() {
  if (id_ != 0) {
    Watcher::Get().Remove(id_);
    return;
  }
  uint64_t one = 1;
  if (::write(stop_.get(), &one, sizeof(one)) < 0) {
    // An eventfd write fails only on overflow; the thread then still sees it readable.
  }
  thread_.join();
}

}  // namespace sbx::server
