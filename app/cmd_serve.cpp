// attn serve: a local lab in the browser. Every number on its pages comes from
// the library through a small JSON API (app/serve_lab.hpp); the pages and their
// script are compiled into the binary (app/serve_pages.cpp).
//
// Safety: it listens on 127.0.0.1 only, on a port no other socket holds, and answers only
// requests whose Host is 127.0.0.1:PORT or localhost:PORT (a page of another site that rebinds
// its DNS name to 127.0.0.1 still sends its own name: refused, 403). Only the lab's own pages
// make it compute: every computation is a POST of application/json (415 otherwise) whose Origin,
// when there is one, is the lab's (403 otherwise); no GET starts work. Connections are read by
// app/serve_http.hpp's event loop with deadlines and size limits, so slow clients hold no worker.
// Bodies are at most kLabMaxBodyBytes (413); every size in a request is bounded (400 naming the
// field); one computation runs at a time with at most kQueue waiting (503 beyond, or after
// kWaitSeconds in the queue); one training run at a time, at most kTrainSeconds long, cancelled
// when its page goes away. Every handler answers through guarded(): whatever it throws, what it
// held is released. SIGINT or SIGTERM stops the server cleanly (the training run is stopped and
// joined).
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdlib>
#include <cstdio>
#include <algorithm>
#include <cctype>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <new>
#include <string>
#include <thread>
#include <utility>

#include <fmt/format.h>
#include <pthread.h>

#include <httplib.h>

#include "command.hpp"
#include "lang_option.hpp"
#include "options.hpp"
#include "model_text.hpp"
#include "serve_decoder.hpp"
#include "serve_exercise.hpp"
#include "serve_http.hpp"
#include "serve_lab.hpp"
#include "serve_pages.hpp"

namespace attn::cli {
namespace {

constexpr int kQueue = 2;              // computations waiting behind the one running
constexpr int kWaitSeconds = 10;       // the longest a computation waits for its turn
constexpr int kTrainSeconds = 120;     // the longest a training run may take
constexpr size_t kKeptSentencePages = 8;  // computed /sentence pages kept for their frame

struct ServeOpts {
    int port = 8712;
    std::string model, lang = "en";
    bool quiet = false;
};

// One computation at a time, a short queue behind it. A turn is held by a Ticket, so it ends
// with the Ticket's scope however the computation ends (a return or any exception).
class Gate {
public:
    class Ticket {
    public:
        explicit Ticket(Gate* g) : g_(g) {}
        Ticket(Ticket&& o) noexcept : g_(std::exchange(o.g_, nullptr)) {}
        Ticket(const Ticket&) = delete;
        Ticket& operator=(const Ticket&) = delete;
        Ticket& operator=(Ticket&&) = delete;
        ~Ticket() {
            if (g_ != nullptr) g_->leave();
        }
        explicit operator bool() const { return g_ != nullptr; }

    private:
        Gate* g_;
    };

    // An empty Ticket when the queue is full or the wait ran past kWaitSeconds.
    Ticket enter() {
        std::unique_lock<std::mutex> lock(m_);
        if (busy_ && waiting_ >= kQueue) return Ticket(nullptr);
        ++waiting_;
        const bool got = cv_.wait_for(lock, std::chrono::seconds(kWaitSeconds), [&] { return !busy_; });
        --waiting_;
        if (!got) return Ticket(nullptr);
        busy_ = true;
        return Ticket(this);
    }

private:
    void leave() noexcept {
        {
            std::lock_guard<std::mutex> lock(m_);
            busy_ = false;
        }
        cv_.notify_one();
    }

    std::mutex m_;
    std::condition_variable cv_;
    bool busy_ = false;
    int waiting_ = 0;
};

void send_json(httplib::Response& res, int status, const nlohmann::json& j) {
    res.status = status;
    res.set_content(j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                    "application/json; charset=utf-8");
}

// Never throws: the message and field go out as ASCII JSON, bytes that are not UTF-8 replaced.
void send_error(httplib::Response& res, int status, const std::string& field, const std::string& message) noexcept {
    try {
        res.status = status;
        res.set_content(lab_error_body(field, message), "application/json; charset=utf-8");
    } catch (...) {
        res.status = 500;
    }
}

// What every handler's exception becomes: a LabError its status and field (a bad body is one:
// parse_lab_body), anything else 500.
// No raw request byte reaches the message (printable).
void answer_exception(httplib::Response& res, const std::exception_ptr& ep) noexcept {
    try {
        std::rethrow_exception(ep);
    } catch (const LabError& e) {
        send_error(res, e.status, printable(e.field), printable(e.what()));
    } catch (const std::bad_alloc&) {
        send_error(res, 503, "", "out of memory for this request; the server goes on");
    } catch (const std::exception& e) {
        send_error(res, 500, "", "attn could not compute this: " + printable(e.what()));
    } catch (...) {
        send_error(res, 500, "", "attn could not compute this (an unknown error)");
    }
}

// The tests' way to throw from inside a handler, while it holds what it holds: with
// ATTN_SERVE_TEST_FAULTS=1 in attn serve's environment, a request with the header
// X-Attn-Test-Fault: runtime | json | alloc | other throws that kind of exception here.
void fault_point(const httplib::Request& req) {
    static const bool on = [] {
        const char* v = std::getenv("ATTN_SERVE_TEST_FAULTS");
        return v != nullptr && std::string(v) == "1";
    }();
    if (!on || !req.has_header("X-Attn-Test-Fault")) return;
    const std::string kind = req.get_header_value("X-Attn-Test-Fault");
    if (kind == "runtime") throw std::runtime_error("a fault in a handler, with a raw byte: \xe9");
    if (kind == "json") (void)nlohmann::json("a raw byte \xe9").dump();  // type_error 316
    if (kind == "alloc") throw std::bad_alloc();
    if (kind == "other") throw 42;
}

using Handler = httplib::Server::Handler;

// Every handler goes through here: whatever it throws becomes one answer, and what it held
// (a Gate::Ticket, a training slot) was released by its destructor on the way out.
Handler guarded(Handler h) {
    return [h = std::move(h)](const httplib::Request& req, httplib::Response& res) {
        try {
            h(req, res);
        } catch (...) {
            res.headers.clear();
            answer_exception(res, std::current_exception());
        }
    };
}

// Runs `work` holding a turn of the gate; busy (503) when none comes.
void compute(Gate& gate, const httplib::Request& req, httplib::Response& res, const std::function<void()>& work) {
    const Gate::Ticket turn = gate.enter();
    if (!turn)
        return send_error(res, 503, "",
                          "busy: another computation is running and the queue is full; try again in a moment");
    fault_point(req);
    work();
}

nlohmann::json body_json(const httplib::Request& req) { return parse_lab_body(req.body); }

// A training run's "error" event; never throws.
std::string error_event(const std::string& why) noexcept {
    try {
        const nlohmann::json e = {{"event", "error"}, {"error", printable(why)}};
        return "data: " + e.dump(-1, ' ', true, nlohmann::json::error_handler_t::replace) + "\n\n";
    } catch (...) {
        return "data: {\"event\": \"error\", \"error\": \"the training run failed\"}\n\n";
    }
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

// The sentence pages computed by POST /api/sentence, kept for the frame's GET of
// /sentence/view/ID (which only reads them): the last kKeptSentencePages.
class SentencePages {
public:
    std::string put(std::string html) {
        std::random_device rd;
        const std::string id = fmt::format("{:08x}{:08x}{:08x}{:08x}", rd(), rd(), rd(), rd());
        std::lock_guard<std::mutex> lock(m_);
        pages_.emplace_back(id, std::move(html));
        if (pages_.size() > kKeptSentencePages) pages_.pop_front();
        return id;
    }
    std::optional<std::string> get(const std::string& id) {
        std::lock_guard<std::mutex> lock(m_);
        for (const auto& [key, html] : pages_)
            if (key == id) return html;
        return std::nullopt;
    }

private:
    std::mutex m_;
    std::deque<std::pair<std::string, std::string>> pages_;
};

class Lab {
public:
    // --model names a GPT-2 folder (the /decoder page's model) or a BERT one (/sentence's).
    explicit Lab(ServeOpts o)
        : o_(std::move(o)),
          decoder_dir_(!o_.model.empty() && is_decoder_folder(o_.model) ? o_.model : ""),
          sentence_dir_(decoder_dir_.empty() ? o_.model : "") {}

    void routes(httplib::Server& svr) {
        for (const PageAsset& a : page_assets())
            svr.Get(a.path, guarded([&a, this](const httplib::Request& req, httplib::Response& res) {
                fault_point(req);
                const std::string lang = req.has_param("lang") ? req.get_param_value("lang") : o_.lang;
                res.set_header("Content-Security-Policy", kPageCsp);
                res.set_content(a.html ? page_html(a, lang == "zh" ? "zh" : "en") : std::string(a.body), a.mime);
            }));
        svr.Post("/api/attention", guarded([this](const httplib::Request& req, httplib::Response& res) {
            compute(gate_, req, res, [&] { send_json(res, 200, lab_attention(body_json(req))); });
        }));
        svr.Post("/api/sqrt-dk", guarded([this](const httplib::Request& req, httplib::Response& res) {
            compute(gate_, req, res, [&] { send_json(res, 200, lab_sqrt_dk(body_json(req))); });
        }));
        svr.Post("/api/sentence", guarded([this](const httplib::Request& req, httplib::Response& res) {
            compute(gate_, req, res, [&] {
                const LabSentenceRequest q = parse_sentence_request(body_json(req), o_.lang);
                const std::string id = sentences_.put(lab_sentence_page(q.text, sentence_dir_, q.lang));
                send_json(res, 200,
                          {{"format", "attn-lab-sentence"}, {"version", 1}, {"view", "/sentence/view/" + id}});
            });
        }));
        // The frame shows what POST /api/sentence computed; it computes nothing.
        svr.Get("/sentence/view/([0-9a-f]{32})", guarded([this](const httplib::Request& req, httplib::Response& res) {
            fault_point(req);
            const std::optional<std::string> html = sentences_.get(req.matches[1].str());
            if (!html)
                return send_error(res, 404, "path", "this sentence's page is no longer kept: show the heads again");
            // The page carries its own policy (script and style by hash); framed by /sentence only.
            res.set_header("Content-Security-Policy", "frame-ancestors 'self'");
            res.set_content(*html, "text/html; charset=utf-8");
        }));
        svr.Post("/api/decoder", guarded([this](const httplib::Request& req, httplib::Response& res) {
            compute(gate_, req, res, [&] { send_json(res, 200, lab_decoder(body_json(req), decoder_dir_)); });
        }));
        svr.Post("/api/exercise", guarded([this](const httplib::Request& req, httplib::Response& res) {
            compute(gate_, req, res, [&] { send_json(res, 200, lab_exercise(body_json(req))); });
        }));
        svr.Post("/api/exercise/check", guarded([this](const httplib::Request& req, httplib::Response& res) {
            compute(gate_, req, res, [&] { send_json(res, 200, lab_exercise_check(body_json(req))); });
        }));
        svr.Post("/api/train",
                 guarded([this](const httplib::Request& req, httplib::Response& res) { train(req, res); }));
        // No GET starts work: the computing addresses answer a GET with 405.
        for (const char* path : {"/api/.*", "/sentence/view"})
            svr.Get(path, guarded([](const httplib::Request& req, httplib::Response& res) {
                res.set_header("Allow", "POST");
                send_error(res, 405, "method",
                           fmt::format("method: {} computes only for a POST of a JSON body (Content-Type: "
                                       "application/json); a GET starts no work", printable(req.path)));
            }));
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
    // POST /api/train {"task", "steps", "seed", "head"}: starts the run and streams its events
    // (server-sent events) in the answer's body; closing the stream cancels the run.
    void train(const httplib::Request& req, httplib::Response& res) {
        const nlohmann::json r = body_json(req);
        validate_train_request(r);
        auto run = std::make_shared<TrainRun>();
        {
            std::lock_guard<std::mutex> lock(m_);
            if (run_ && !run_finished(*run_))
                return send_error(res, 503, "",
                                  "busy: a training run is going; stop it (or wait) before starting another");
            if (run_ && run_->worker.joinable()) run_->worker.join();
            run_ = run;
        }
        // Until its worker runs, the slot is this handler's: a throw on the way frees it.
        struct Release {
            std::shared_ptr<TrainRun> run;
            bool kept = false;
            ~Release() {
                if (kept) return;
                std::lock_guard<std::mutex> lock(run->m);
                run->finished = true;
            }
        } release{run};
        fault_point(req);
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
                    push("data: " + e.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n\n");
                });
            } catch (const std::exception& e) {
                push(error_event(e.what()));
            } catch (...) {
                push(error_event("an unknown error"));
            }
            std::lock_guard<std::mutex> lock(run->m);
            run->finished = true;
            run->cv.notify_all();
        });
        release.kept = true;
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
    std::string decoder_dir_, sentence_dir_;  // "": the default of each
    Gate gate_;
    SentencePages sentences_;
    std::mutex m_;
    std::shared_ptr<TrainRun> run_;
};

// Host must name this server: 127.0.0.1 or localhost, with this port or none.
bool host_allowed(const std::string& host, int port) {
    for (const char* name : {"127.0.0.1", "localhost"})
        if (host == name || host == fmt::format("{}:{}", name, port)) return true;
    return false;
}

// An Origin the lab's own pages send: http://127.0.0.1:PORT or http://localhost:PORT.
bool origin_allowed(const std::string& origin, int port) {
    for (const char* name : {"127.0.0.1", "localhost"})
        if (origin == fmt::format("http://{}:{}", name, port)) return true;
    return false;
}

bool is_json(const std::string& content_type) {
    std::string media = content_type.substr(0, content_type.find(';'));
    media.erase(0, media.find_first_not_of(" \t"));
    media.erase(media.find_last_not_of(" \t") + 1);
    std::transform(media.begin(), media.end(), media.begin(), [](unsigned char c) { return std::tolower(c); });
    return media == "application/json";
}

// Before any route: the Host names this server, an Origin is the lab's own, and a POST (every
// request that computes) carries JSON. Otherwise one line says why (403, 415).
httplib::Server::HandlerResponse screen(const httplib::Request& req, httplib::Response& res, int port) {
    using R = httplib::Server::HandlerResponse;
    if (!host_allowed(req.get_header_value("Host"), port)) {
        send_error(res, 403, "Host",
                   fmt::format("Host: attn serve answers to 127.0.0.1:{} and localhost:{} only", port, port));
        return R::Handled;
    }
    if (req.has_header("Origin") && !origin_allowed(req.get_header_value("Origin"), port)) {
        send_error(res, 403, "Origin",
                   fmt::format("Origin: attn serve computes only for its own pages (http://127.0.0.1:{} or "
                               "http://localhost:{}), not for '{}'",
                               port, port, printable(req.get_header_value("Origin"))));
        return R::Handled;
    }
    if (req.method == "POST" && !is_json(req.get_header_value("Content-Type"))) {
        send_error(res, 415, "Content-Type",
                   fmt::format("Content-Type: a request that computes must be application/json, got '{}'",
                               printable(req.get_header_value("Content-Type"))));
        return R::Handled;
    }
    return R::Unhandled;
}

int run_serve(const ServeOpts& o) {
    // SIGINT and SIGTERM go to one thread that stops the server (the others never see them).
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);

    HttpLimits limits;
    limits.max_body = kLabMaxBodyBytes;
    LabHttpServer svr(limits);
    Lab lab(o);
    const int port = svr.bind_exclusive(o.port);
    svr.set_pre_routing_handler([port](const httplib::Request& req, httplib::Response& res) {
        return screen(req, res, port);
    });
    svr.set_post_routing_handler([](const httplib::Request&, httplib::Response& res) {
        res.set_header("X-Content-Type-Options", "nosniff");
        res.set_header("Referrer-Policy", "no-referrer");
    });
    svr.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
        answer_exception(res, ep);
    });
    svr.set_error_handler([](const httplib::Request&, httplib::Response& res) {
        if (!res.body.empty()) return;
        if (res.status == 413)
            send_error(res, 413, "body", fmt::format("body: at most {} bytes", kLabMaxBodyBytes));
        else if (res.status == 404)
            send_error(res, 404, "path",
                       "no such page or API (the pages: /, /playground, /sqrt-dk, /sentence, /train, /decoder, "
                       "/exercise)");
        else
            send_error(res, res.status, "", "the request could not be served");
    });
    lab.routes(svr);

    std::thread stopper([&] {
        int sig = 0;
        sigwait(&signals, &sig);
        if (sig != 0) svr.request_stop();
    });
    fmt::print("attn serve: the lab is at http://127.0.0.1:{}/  (Ctrl-C stops it)\n", port);
    std::fflush(stdout);
    svr.serve();
    lab.shutdown();
    // The stopper is still in sigwait when listen ended another way: wake it.
    pthread_kill(stopper.native_handle(), SIGTERM);
    stopper.join();
    if (!o.quiet) fmt::print("attn serve: stopped\n");
    return 0;
}

attn::cli::Command serve_cmd{
    "serve", "A local lab in the browser: knobs that recompute attention with the library (127.0.0.1 only)", 95,
    [](CLI::App& sub) -> attn::cli::Runner {
        auto o = std::make_shared<ServeOpts>();
        sub.footer(
            "Pages: / (index), /playground (Q, K, V, scores and weights as knobs move), /sqrt-dk (the variance\n"
            "experiment, live), /sentence (MiniLM's heads on your text), /train (a tiny training run, streamed),\n"
            "/decoder (a GPT-2 decoder's tokens and next-token distribution on your prompt), /exercise (the\n"
            "exercises of attn exercise: download the inputs, upload your answer, see the stage table).\n"
            "Listens on 127.0.0.1 only and answers only to Host 127.0.0.1 or localhost. --port 0 picks a free port.");
        sub.add_option("--port", o->port, "TCP port on 127.0.0.1 (0: any free port)")
            ->capture_default_str()
            ->check(attn::cli::integer_in(0, 65535));
        sub.add_option("--model", o->model,
                       "Model folder: a GPT-2 folder for /decoder (default: the shipped macbeth-char), or a BERT "
                       "folder for /sentence (default: the fetched MiniLM)");
        add_lang_option(sub, o->lang, "UI language of the pages", "a page's ?lang= overrides");
        sub.add_flag("-q,--quiet", o->quiet, "No message when the server stops");
        return [o] { return run_serve(*o); };
    }};

}  // namespace
}  // namespace attn::cli
