// app/serve_http.cpp: the connections of `attn serve` (see serve_http.hpp).
#include "serve_http.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <stdexcept>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "attn/core/errors.hpp"
#include "serve_lab.hpp"

namespace attn::cli {

using Clock = std::chrono::steady_clock;

// A connection: the bytes received and not yet answered, and what the loop waits for.
struct LabHttpServer::Conn {
    enum class State { Idle, Headers, Body, Draining };
    int fd = -1;
    std::string buf;
    State state = State::Idle;
    Clock::time_point deadline;
    size_t header_end = 0;  // bytes of the request line and headers, blank line included
    size_t body_len = 0;    // Content-Length
    int served = 0;
    size_t drained = 0;
};

namespace {

std::string lower(std::string s) {
    for (char& c : s) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    return s;
}

std::string trim(const std::string& s) {
    const size_t b = s.find_first_not_of(" \t\r");
    if (b == std::string::npos) return "";
    return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

const char* reason(int status) {
    switch (status) {
        case 400: return "Bad Request";
        case 408: return "Request Timeout";
        case 411: return "Length Required";
        case 413: return "Payload Too Large";
        case 431: return "Request Header Fields Too Large";
        default: return "Service Unavailable";
    }
}

// The whole answer to a request refused before it reached httplib (it closes the connection).
std::string refusal(int status, const std::string& field, const std::string& message) {
    const std::string body = lab_error_body(field, message);
    return fmt::format("HTTP/1.1 {} {}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: {}\r\n"
                       "X-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n{}",
                       status, reason(status), body.size(), body);
}

// Best effort: the loop never waits for a client to read.
void send_now(int fd, const std::string& s) {
    size_t done = 0;
    while (done < s.size()) {
        const ssize_t k = ::send(fd, s.data() + done, s.size() - done, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (k <= 0) return;
        done += static_cast<size_t>(k);
    }
}

bool wait_writable(int fd, Clock::time_point deadline) {
    for (;;) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
        if (left <= 0) return false;
        pollfd p{fd, POLLOUT, 0};
        const int r = ::poll(&p, 1, static_cast<int>(left));
        if (r > 0) return (p.revents & (POLLERR | POLLHUP | POLLNVAL)) == 0;
        if (r < 0 && errno != EINTR) return false;
    }
}

// One whole request for httplib: read from the bytes the loop collected, written to the socket
// with a deadline per write.
class BufferedStream : public httplib::Stream {
public:
    BufferedStream(int fd, std::string data, int write_seconds)
        : fd_(fd), data_(std::move(data)), write_seconds_(write_seconds) {}
    bool is_readable() const override { return pos_ < data_.size(); }
    bool is_writable() const override {
        return wait_writable(fd_, Clock::now() + std::chrono::seconds(write_seconds_));
    }
    ssize_t read(char* ptr, size_t size) override {
        const size_t n = std::min(size, data_.size() - pos_);
        std::memcpy(ptr, data_.data() + pos_, n);
        pos_ += n;
        return static_cast<ssize_t>(n);
    }
    ssize_t write(const char* ptr, size_t size) override {
        const auto deadline = Clock::now() + std::chrono::seconds(write_seconds_);
        size_t done = 0;
        while (done < size) {
            const ssize_t k = ::send(fd_, ptr + done, size - done, MSG_NOSIGNAL | MSG_DONTWAIT);
            if (k > 0) {
                done += static_cast<size_t>(k);
            } else if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
                if (!wait_writable(fd_, deadline)) return -1;
            } else {
                return -1;
            }
        }
        return static_cast<ssize_t>(size);
    }
    void get_remote_ip_and_port(std::string& ip, int& port) const override { address(false, ip, port); }
    void get_local_ip_and_port(std::string& ip, int& port) const override { address(true, ip, port); }
    socket_t socket() const override { return fd_; }

private:
    void address(bool local, std::string& ip, int& port) const {
        sockaddr_in a{};
        socklen_t len = sizeof(a);
        const int r = local ? ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len)
                            : ::getpeername(fd_, reinterpret_cast<sockaddr*>(&a), &len);
        char text[INET_ADDRSTRLEN] = "";
        if (r == 0 && a.sin_family == AF_INET) inet_ntop(AF_INET, &a.sin_addr, text, sizeof(text));
        ip = text;
        port = r == 0 ? ntohs(a.sin_port) : 0;
    }
    int fd_;
    std::string data_;
    size_t pos_ = 0;
    int write_seconds_;
};

}  // namespace

LabHttpServer::LabHttpServer(HttpLimits limits) : limits_(limits) {
    set_payload_max_length(limits_.max_body);
    set_keep_alive_timeout(limits_.idle_seconds);
    set_keep_alive_max_count(static_cast<size_t>(limits_.max_requests_per_connection));
    if (::pipe2(wake_, O_NONBLOCK | O_CLOEXEC) != 0) throw std::runtime_error("attn serve: cannot make a pipe");
}

LabHttpServer::~LabHttpServer() {
    for (auto& c : conns_) ::close(c->fd);
    if (listen_fd_ >= 0) ::close(listen_fd_);
    ::close(wake_[0]);
    ::close(wake_[1]);
}

int LabHttpServer::bind_exclusive(int port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) throw InputError(fmt::format("--port: cannot open a socket ({})", std::strerror(errno)));
    // SO_REUSEADDR lets a restart bind past the last run's closed connections (TIME_WAIT); on
    // Linux it never lets two sockets listen on one port. SO_REUSEPORT, which would, is not set.
    const int yes = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 || ::listen(fd, 1024) != 0) {
        const int e = errno;
        ::close(fd);
        if (e == EADDRINUSE)
            throw InputError(fmt::format("--port: 127.0.0.1:{} is in use (by another attn serve or another program); "
                                         "pick another, or --port 0 for any free one", port));
        if (e == EACCES)
            throw InputError(
                fmt::format("--port: not allowed to listen on port {} (below 1024 needs privileges)", port));
        throw InputError(fmt::format("--port: cannot listen on 127.0.0.1:{} ({})", port, std::strerror(e)));
    }
    socklen_t len = sizeof(a);
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    listen_fd_ = fd;
    return ntohs(a.sin_port);
}

bool LabHttpServer::process_and_close_socket(socket_t sock) {
    ::close(sock);
    return false;
}

void LabHttpServer::request_stop() {
    stopping_ = true;
    const char b = 1;
    [[maybe_unused]] const ssize_t n = ::write(wake_[1], &b, 1);
    cv_.notify_all();
}

void LabHttpServer::serve() {
    svr_sock_ = listen_fd_;  // httplib's "not shutting down" while streaming an answer
    for (int i = 0; i < limits_.workers; ++i) workers_.emplace_back([this] { worker(); });
    while (!stopping_) loop_once();
    svr_sock_ = INVALID_SOCKET;
    {
        std::lock_guard<std::mutex> lock(m_);
        cv_.notify_all();
    }
    for (auto& w : workers_) w.join();
    workers_.clear();
    for (auto& c : conns_) ::close(c->fd);
    conns_.clear();
    for (auto& j : jobs_) ::close(j->fd);
    jobs_.clear();
    for (auto& r : returned_) ::close(r.first->fd);
    returned_.clear();
}

void LabHttpServer::loop_once() {
    {
        std::lock_guard<std::mutex> lock(m_);
        for (auto& [c, close] : returned_) {
            if (close) {
                start_draining(*c);
            } else {
                c->state = c->buf.empty() ? Conn::State::Idle : Conn::State::Headers;
                c->deadline = Clock::now() + std::chrono::seconds(c->buf.empty() ? limits_.idle_seconds
                                                                                 : limits_.header_seconds);
            }
            conns_.push_back(std::move(c));
        }
        returned_.clear();
    }
    // A kept-alive connection whose next request is already here (pipelined) goes on at once.
    for (size_t i = 0; i < conns_.size(); ++i)
        if (conns_[i]->state == Conn::State::Headers) advance(*conns_[i]);
    std::vector<pollfd> fds;
    fds.push_back({wake_[0], POLLIN, 0});
    fds.push_back({listen_fd_, POLLIN, 0});
    auto next = Clock::now() + std::chrono::seconds(1);
    for (auto& c : conns_) {
        fds.push_back({c->fd, POLLIN, 0});
        next = std::min(next, c->deadline);
    }
    const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next - Clock::now()).count();
    const int r = ::poll(fds.data(), fds.size(), static_cast<int>(std::clamp<int64_t>(wait + 1, 0, 1000)));
    if (r < 0 && errno != EINTR) return;
    if (fds[0].revents & POLLIN) {
        char drain[64];
        while (::read(wake_[0], drain, sizeof(drain)) > 0) {
        }
    }
    if (stopping_) return;
    // Read what came; the Conn objects stay where they are until the sweep below.
    std::vector<int> ready;
    for (size_t i = 2; i < fds.size(); ++i)
        if (fds[i].revents != 0) ready.push_back(fds[i].fd);
    for (int fd : ready)
        for (auto& c : conns_)
            if (c->fd == fd) {
                read_some(*c);
                break;
            }
    const auto now = Clock::now();
    for (auto& c : conns_) {
        if (c->fd < 0 || c->deadline > now) continue;
        if (c->state == Conn::State::Headers)
            refuse(*c, 408, "",
                   fmt::format("the request line and headers must arrive within {} s", limits_.header_seconds));
        else if (c->state == Conn::State::Body)
            refuse(*c, 408, "body", fmt::format("body: must arrive within {} s of the headers", limits_.body_seconds));
        else
            close_conn(c->fd), c->fd = -1;
    }
    // Connections closed or handed to a worker leave the loop's list.
    conns_.erase(std::remove_if(conns_.begin(), conns_.end(), [](const auto& c) { return c == nullptr || c->fd < 0; }),
                 conns_.end());
    if (fds[1].revents & POLLIN) accept_all();
}

void LabHttpServer::accept_all() {
    for (;;) {
        const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) return;
        auto c = std::make_unique<Conn>();
        c->fd = fd;
        c->deadline = Clock::now() + std::chrono::seconds(limits_.idle_seconds);
        if (conns_.size() + busy_ >= limits_.max_connections) {
            send_now(fd, refusal(503, "", fmt::format("busy: {} connections are open; try again in a moment",
                                                       limits_.max_connections)));
            start_draining(*c);
        }
        conns_.push_back(std::move(c));
    }
}

void LabHttpServer::read_some(Conn& c) {
    char tmp[16384];
    const ssize_t n = ::recv(c.fd, tmp, sizeof(tmp), 0);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
    if (n <= 0) {  // the client closed, or the connection broke: nothing to answer
        close_conn(c.fd);
        c.fd = -1;
        return;
    }
    if (c.state == Conn::State::Draining) {
        c.drained += static_cast<size_t>(n);
        if (c.drained > (1u << 20)) close_conn(c.fd), c.fd = -1;
        return;
    }
    c.buf.append(tmp, static_cast<size_t>(n));
    if (c.state == Conn::State::Idle) {
        c.state = Conn::State::Headers;
        c.deadline = Clock::now() + std::chrono::seconds(limits_.header_seconds);
    }
    advance(c);
}

// Headers complete? Within limits? Body complete? A whole request goes to a worker.
void LabHttpServer::advance(Conn& c) {
    if (c.state == Conn::State::Headers) {
        const size_t crlf = c.buf.find("\r\n\r\n"), lf = c.buf.find("\n\n");
        const size_t end = std::min(crlf == std::string::npos ? crlf : crlf + 4, lf == std::string::npos ? lf : lf + 2);
        if (end == std::string::npos ? c.buf.size() > limits_.max_header_bytes : end > limits_.max_header_bytes)
            return refuse(c, 431, "headers", fmt::format("headers: the request line and headers together must be at "
                                                         "most {} bytes", limits_.max_header_bytes));
        if (end == std::string::npos) return;
        size_t lines = 0, length = 0, start = c.buf.find('\n') + 1;
        bool has_length = false;
        while (start < end) {
            const size_t eol = c.buf.find('\n', start);
            const std::string line = trim(c.buf.substr(start, eol - start));
            const size_t line_start = start;
            start = eol + 1;
            if (line.empty()) continue;
            if (++lines > limits_.max_headers)
                return refuse(c, 431, "headers", fmt::format("headers: at most {} header lines", limits_.max_headers));
            const size_t colon = line.find(':');
            const std::string name = lower(trim(line.substr(0, colon == std::string::npos ? 0 : colon)));
            const std::string value = colon == std::string::npos ? "" : trim(line.substr(colon + 1));
            if (name == "transfer-encoding")
                return refuse(c, 411, "Transfer-Encoding", "Transfer-Encoding: send the body with a Content-Length");
            if (name == "expect" && lower(c.buf.substr(line_start, 6)) == "expect")
                c.buf.replace(line_start, 6, "X-Expc");  // its 100 Continue is sent here, not by httplib
            if (name != "content-length") continue;
            const bool digits = !value.empty() && value.size() < 18 &&
                                std::all_of(value.begin(), value.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
            if (!digits || (has_length && std::stoull(value) != length))
                return refuse(c, 400, "Content-Length", "Content-Length: must be one decimal number");
            length = static_cast<size_t>(std::stoull(value));
            has_length = true;
        }
        if (length > limits_.max_body)
            return refuse(c, 413, "body", fmt::format("body: at most {} bytes, got {}", limits_.max_body, length));
        c.header_end = end;
        c.body_len = length;
        c.state = Conn::State::Body;
        c.deadline = Clock::now() + std::chrono::seconds(limits_.body_seconds);
        if (c.buf.size() < end + length && c.buf.find("X-Expc") < end) send_now(c.fd, "HTTP/1.1 100 Continue\r\n\r\n");
    }
    if (c.state == Conn::State::Body && c.buf.size() >= c.header_end + c.body_len) dispatch(c.fd);
}

void LabHttpServer::refuse(Conn& c, int status, const std::string& field, const std::string& message) {
    send_now(c.fd, refusal(status, field, message));
    start_draining(c);
}

// After the last answer: no more writes, and what the client still sends is read and dropped
// for a second, so its socket sees the answer before the close (not a reset).
void LabHttpServer::start_draining(Conn& c) {
    ::shutdown(c.fd, SHUT_WR);
    c.state = Conn::State::Draining;
    c.buf.clear();
    c.deadline = Clock::now() + std::chrono::seconds(1);
}

void LabHttpServer::dispatch(int fd) {
    for (auto& c : conns_)
        if (c && c->fd == fd) {
            std::lock_guard<std::mutex> lock(m_);
            ++busy_;
            auto job = std::make_unique<Conn>(std::move(*c));
            c->fd = -1;  // swept from the loop's list
            jobs_.push_back(std::move(job));
            cv_.notify_one();
            return;
        }
}

void LabHttpServer::worker() {
    for (;;) {
        std::unique_ptr<Conn> c;
        {
            std::unique_lock<std::mutex> lock(m_);
            cv_.wait(lock, [&] { return !jobs_.empty() || stopping_; });
            if (stopping_) return;
            c = std::move(jobs_.front());
            jobs_.pop_front();
        }
        std::string request = c->buf.substr(0, c->header_end + c->body_len);
        c->buf.erase(0, c->header_end + c->body_len);
        const bool close = ++c->served >= limits_.max_requests_per_connection;
        bool closed = false, ok = false;
        try {
            BufferedStream s(c->fd, std::move(request), limits_.write_seconds);
            ok = process_request(s, close, closed, nullptr);
        } catch (...) {
            ok = false;  // an answer that failed half-written: the connection ends
        }
        give_back(std::move(c), !ok || closed || close);
    }
}

void LabHttpServer::give_back(std::unique_ptr<Conn> c, bool close) {
    {
        std::lock_guard<std::mutex> lock(m_);
        returned_.emplace_back(std::move(c), close);
        --busy_;
    }
    const char b = 1;
    [[maybe_unused]] const ssize_t n = ::write(wake_[1], &b, 1);
}

void LabHttpServer::close_conn(int fd) { ::close(fd); }

}  // namespace attn::cli
