// app/serve_http.hpp: the connections of `attn serve`. cpp-httplib parses requests, routes
// them and writes the answers; this class decides what reaches it. One event loop reads every
// connection (poll) with deadlines and limits, and only a whole request (request line, headers
// and body, all within their limits) is handed to a worker thread, which runs httplib's
// process_request on those bytes. A client that sends a byte a second, or nothing at all, holds
// a file descriptor until its deadline, never a worker: it cannot stall the others.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>

namespace attn::cli {

struct HttpLimits {
    int header_seconds = 5;     // the request line and headers, counted from the request's first byte
    int body_seconds = 5;       // the body, counted from the end of the headers
    int idle_seconds = 5;       // a connection with no request (new, or kept alive after one)
    int write_seconds = 5;      // each write of an answer to a client that does not read
    size_t max_header_bytes = 16 * 1024;  // request line and headers together (431 past it)
    size_t max_headers = 64;              // header lines (431 past it)
    size_t max_body = 16 * 1024;          // 413 past it, before the body is read
    size_t max_connections = 256;         // open at once; beyond, 503 and closed
    int workers = 8;                      // threads that run whole requests
    int max_requests_per_connection = 100;
};

class LabHttpServer : public httplib::Server {
public:
    explicit LabHttpServer(HttpLimits limits);
    ~LabHttpServer() override;
    LabHttpServer(const LabHttpServer&) = delete;
    LabHttpServer& operator=(const LabHttpServer&) = delete;

    // Listens on 127.0.0.1:port (0: any free port) and on no port another socket holds (no
    // SO_REUSEPORT): the port, or an InputError naming --port.
    int bind_exclusive(int port);
    // Serves until request_stop(); returns once every worker has finished.
    void serve();
    // From any thread: ends serve().
    void request_stop();

    const HttpLimits& limits() const { return limits_; }

    struct Conn;

private:
    bool process_and_close_socket(socket_t sock) override;  // unused: serve() owns the sockets
    void loop_once();
    void accept_all();
    void read_some(Conn& c);
    void advance(Conn& c);
    void refuse(Conn& c, int status, const std::string& field, const std::string& message);
    void start_draining(Conn& c);
    void dispatch(int fd);
    void worker();
    void give_back(std::unique_ptr<Conn> c, bool close);
    void close_conn(int fd);

    HttpLimits limits_;
    int listen_fd_ = -1;
    int wake_[2] = {-1, -1};
    std::atomic<bool> stopping_{false};
    std::vector<std::unique_ptr<Conn>> conns_;  // read by the loop, indexed by nothing: small
    std::atomic<size_t> busy_{0};               // connections in a worker's hands
    std::mutex m_;
    std::condition_variable cv_;
    std::deque<std::unique_ptr<Conn>> jobs_;      // whole requests waiting for a worker
    std::vector<std::pair<std::unique_ptr<Conn>, bool>> returned_;  // (connection, close it) from workers
    std::vector<std::thread> workers_;
};

}  // namespace attn::cli
