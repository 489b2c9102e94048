// attn serve: a local lab in the browser. Every number on its pages comes from
// the library through a small JSON API (app/serve_lab.hpp); the pages and their
// script are compiled into the binary (app/serve_pages.cpp).
//
// Safety: it listens on 127.0.0.1 only and answers only requests whose Host is
// 127.0.0.1:PORT or localhost:PORT (a page of another site that rebinds its DNS
// name to 127.0.0.1 still sends its own name: refused, 403). Bodies are at most
// 16 KiB (413); every size in a request is bounded (400 naming the field); one
// computation runs at a time with at most kQueue waiting (503 beyond, or after
// kWaitSeconds in the queue); one training run at a time, at most
// kTrainSeconds long, cancelled when its page goes away. SIGINT or SIGTERM stops
// the server cleanly (the training run is stopped and joined).
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include <fmt/format.h>
#include <pthread.h>

#include <httplib.h>

#include "command.hpp"
#include "options.hpp"
#include "serve_lab.hpp"
#include "serve_pages.hpp"

namespace attn::cli {
namespace {

constexpr int kQueue = 2;              // computations waiting behind the one running
constexpr int kWaitSeconds = 10;       // the longest a computation waits for its turn
constexpr int kTrainSeconds = 120;     // the longest a training run may take
constexpr size_t kMaxBody = 16 * 1024;

struct ServeOpts {
    int port = 8712;
    std::string model, lang = "en";
    bool quiet = false;
};

// One computation at a time, a short queue behind it.
class Gate {
public:
    // False when the queue is full or the wait ran past kWaitSeconds.
    bool enter() {
        std::unique_lock<std::mutex> lock(m_);
        if (busy_ && waiting_ >= kQueue) return false;
        ++waiting_;
        const bool got = cv_.wait_for(lock, std::chrono::seconds(kWaitSeconds), [&] { return !busy_; });
        --waiting_;
        if (!got) return false;
        busy_ = true;
        return true;
    }
    void leave() {
        {
            std::lock_guard<std::mutex> lock(m_);
            busy_ = false;
        }
        cv_.notify_one();
    }

private:
    std::mutex m_;
    std::condition_variable cv_;
    bool busy_ = false;
    int waiting_ = 0;
};

void send_json(httplib::Response& res, int status, const nlohmann::json& j) {
    res.status = status;
    res.set_content(j.dump(), "application/json; charset=utf-8");
}

void send_error(httplib::Response& res, int status, const std::string& field, const std::string& message) {
    send_json(res, status, {{"format", "attn-lab-error"}, {"version", 1}, {"error", message}, {"field", field}});
}

// Runs `work` under the gate and answers its JSON, or the error it names.
void compute(Gate& gate, httplib::Response& res, const std::function<void()>& work) {
    if (!gate.enter()) {
        send_error(res, 503, "", "busy: another computation is running and the queue is full; try again in a moment");
        return;
    }
    try {
        work();
    } catch (const LabError& e) {
        send_error(res, e.status, e.field, e.what());
    } catch (const nlohmann::json::exception& e) {
        send_error(res, 400, "body", fmt::format("body: not valid JSON ({})", e.what()));
    } catch (const std::exception& e) {
        send_error(res, 500, "", fmt::format("attn could not compute this: {}", e.what()));
    }
    gate.leave();
}

nlohmann::json body_json(const httplib::Request& req) {
    if (req.body.empty()) return nlohmann::json::object();
    return nlohmann::json::parse(req.body);
}

// The one training run: its events, appended by the worker and read by the stream.
struct TrainRun {
    std::mutex m;
    std::condition_variable cv;
    std::deque<std::string> events;  // "data: ...\n\n" lines not yet sent
    bool finished = false;
    std::atomic<bool> stop{false};
    std::thread worker;
};

class Lab {
public:
    explicit Lab(ServeOpts o) : o_(std::move(o)) {}

    void routes(httplib::Server& svr) {
        for (const PageAsset& a : page_assets())
            svr.Get(a.path, [&a, this](const httplib::Request& req, httplib::Response& res) {
                const std::string lang = req.has_param("lang") ? req.get_param_value("lang") : o_.lang;
                res.set_header("Content-Security-Policy", kPageCsp);
                res.set_content(a.html ? page_html(a, lang == "zh" ? "zh" : "en") : std::string(a.body), a.mime);
            });
        svr.Post("/api/attention", [this](const httplib::Request& req, httplib::Response& res) {
            compute(gate_, res, [&] { send_json(res, 200, lab_attention(body_json(req))); });
        });
        svr.Post("/api/sqrt-dk", [this](const httplib::Request& req, httplib::Response& res) {
            compute(gate_, res, [&] { send_json(res, 200, lab_sqrt_dk(body_json(req))); });
        });
        svr.Get("/sentence/view", [this](const httplib::Request& req, httplib::Response& res) {
            const std::string lang = (req.has_param("lang") ? req.get_param_value("lang") : o_.lang) == "zh" ? "zh" : "en";
            compute(gate_, res, [&] {
                // The page carries its own policy (script and style by hash); framed by /sentence only.
                res.set_header("Content-Security-Policy", "frame-ancestors 'self'");
                res.set_content(lab_sentence_page(req.get_param_value("text"), o_.model, lang), "text/html; charset=utf-8");
            });
        });
        svr.Get("/api/train", [this](const httplib::Request& req, httplib::Response& res) { train(req, res); });
    }

    // Stops the training run (if any) and waits for it.
    void shutdown() {
        std::shared_ptr<TrainRun> run;
        {
            std::lock_guard<std::mutex> lock(m_);
            run = run_;
        }
        if (run) {
            run->stop = true;
            if (run->worker.joinable()) run->worker.join();
        }
    }

private:
    // GET /api/train?task=..&steps=..&seed=..&head=..: starts the run and streams its
    // events (server-sent events); closing the stream cancels the run.
    void train(const httplib::Request& req, httplib::Response& res) {
        nlohmann::json r = nlohmann::json::object();
        for (const char* f : {"task", "steps", "seed", "head"})
            if (req.has_param(f)) {
                const std::string v = req.get_param_value(f);
                r[f] = std::string(f) == "task" ? nlohmann::json(v) : nlohmann::json::parse(v, nullptr, false);
            }
        try {
            validate_train_request(r);
        } catch (const LabError& e) {
            return send_error(res, e.status, e.field, e.what());
        }
        auto run = std::make_shared<TrainRun>();
        {
            std::lock_guard<std::mutex> lock(m_);
            if (run_ && !run_finished(*run_))
                return send_error(res, 503, "", "busy: a training run is going; stop it (or wait) before starting another");
            if (run_ && run_->worker.joinable()) run_->worker.join();
            run_ = run;
        }
        run->worker = std::thread([run, r] {
            const auto t0 = std::chrono::steady_clock::now();
            auto push = [&](const std::string& line) {
                std::lock_guard<std::mutex> lock(run->m);
                run->events.push_back(line);
                run->cv.notify_all();
            };
            try {
                run_lab_training(r, run->stop, [&](const nlohmann::json& e) {
                    if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(kTrainSeconds)) run->stop = true;
                    push("data: " + e.dump() + "\n\n");
                });
            } catch (const std::exception& e) {
                push("data: " + nlohmann::json{{"event", "error"}, {"error", e.what()}}.dump() + "\n\n");
            }
            std::lock_guard<std::mutex> lock(run->m);
            run->finished = true;
            run->cv.notify_all();
        });
        res.set_header("Cache-Control", "no-store");
        res.set_chunked_content_provider(
            "text/event-stream",
            [run](size_t, httplib::DataSink& sink) {
                std::unique_lock<std::mutex> lock(run->m);
                run->cv.wait_for(lock, std::chrono::seconds(1), [&] { return !run->events.empty() || run->finished; });
                while (!run->events.empty()) {
                    const std::string line = std::move(run->events.front());
                    run->events.pop_front();
                    lock.unlock();
                    if (!sink.write(line.data(), line.size())) {
                        run->stop = true;  // the page went away: cancel the run
                        return false;
                    }
                    lock.lock();
                }
                if (run->finished) {
                    sink.done();
                    return true;
                }
                lock.unlock();
                static const std::string keep = ": still training\n\n";
                if (!sink.write(keep.data(), keep.size())) {
                    run->stop = true;
                    return false;
                }
                return true;
            },
            [run](bool) { run->stop = true; });
    }

    static bool run_finished(TrainRun& r) {
        std::lock_guard<std::mutex> lock(r.m);
        return r.finished;
    }

    ServeOpts o_;
    Gate gate_;
    std::mutex m_;
    std::shared_ptr<TrainRun> run_;
};

// Host must name this server: 127.0.0.1 or localhost, with this port or none.
bool host_allowed(const std::string& host, int port) {
    for (const char* name : {"127.0.0.1", "localhost"})
        if (host == name || host == fmt::format("{}:{}", name, port)) return true;
    return false;
}

int run_serve(const ServeOpts& o) {
    if (o.lang != "en" && o.lang != "zh") throw InputError(fmt::format("--lang: must be en or zh, got '{}'", o.lang));
    // SIGINT and SIGTERM go to one thread that stops the server (the others never see them).
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);

    httplib::Server svr;
    Lab lab(o);
    int port = o.port;
    svr.set_payload_max_length(kMaxBody);
    svr.set_read_timeout(5, 0);
    svr.set_write_timeout(5, 0);
    svr.set_pre_routing_handler([&port](const httplib::Request& req, httplib::Response& res) {
        if (host_allowed(req.get_header_value("Host"), port)) return httplib::Server::HandlerResponse::Unhandled;
        send_error(res, 403, "Host",
                   fmt::format("Host: attn serve answers to 127.0.0.1:{} and localhost:{} only", port, port));
        return httplib::Server::HandlerResponse::Handled;
    });
    svr.set_post_routing_handler([](const httplib::Request&, httplib::Response& res) {
        res.set_header("X-Content-Type-Options", "nosniff");
        res.set_header("Referrer-Policy", "no-referrer");
    });
    svr.set_error_handler([](const httplib::Request&, httplib::Response& res) {
        if (!res.body.empty()) return;
        if (res.status == 413)
            send_error(res, 413, "body", fmt::format("body: at most {} bytes", kMaxBody));
        else if (res.status == 404)
            send_error(res, 404, "path", "no such page or API (the pages: /, /playground, /sqrt-dk, /sentence, /train)");
        else
            send_error(res, res.status, "", "the request could not be served");
    });
    lab.routes(svr);

    if (o.port == 0) {
        port = svr.bind_to_any_port("127.0.0.1");
        if (port < 0) throw InputError("--port: no free port on 127.0.0.1");
    } else if (!svr.bind_to_port("127.0.0.1", o.port)) {
        throw InputError(fmt::format("--port: cannot listen on 127.0.0.1:{} (in use? pick another with --port)", o.port));
    }
    std::thread stopper([&] {
        int sig = 0;
        sigwait(&signals, &sig);
        if (sig != 0) svr.stop();
    });
    fmt::print("attn serve: the lab is at http://127.0.0.1:{}/  (Ctrl-C stops it)\n", port);
    std::fflush(stdout);
    const bool ok = svr.listen_after_bind();
    lab.shutdown();
    // The stopper is still in sigwait when listen ended another way: wake it.
    pthread_kill(stopper.native_handle(), SIGTERM);
    stopper.join();
    if (!o.quiet) fmt::print("attn serve: stopped\n");
    return ok ? 0 : 1;
}

attn::cli::Command reg{
    "serve", "A local lab in the browser: knobs that recompute attention with the library (127.0.0.1 only)", 95,
    [](CLI::App& sub) -> attn::cli::Runner {
        auto o = std::make_shared<ServeOpts>();
        sub.footer(
            "Pages: / (index), /playground (Q, K, V, scores and weights as knobs move), /sqrt-dk (the variance\n"
            "experiment, live), /sentence (MiniLM's heads on your text), /train (a tiny training run, streamed).\n"
            "Listens on 127.0.0.1 only and answers only to Host 127.0.0.1 or localhost. --port 0 picks a free port.");
        sub.add_option("--port", o->port, "TCP port on 127.0.0.1 (0: any free port)")
            ->capture_default_str()
            ->check(attn::cli::integer_in(0, 65535));
        sub.add_option("--model", o->model, "Model folder for /sentence (default: the fetched MiniLM)");
        sub.add_option("--lang", o->lang, "UI language of the pages: en or zh (a page's ?lang= overrides)")
            ->capture_default_str();
        sub.add_flag("-q,--quiet", o->quiet, "No message when the server stops");
        return [o] { return run_serve(*o); };
    }};

}  // namespace
}  // namespace attn::cli
