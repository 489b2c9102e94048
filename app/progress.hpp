// app/progress.hpp: the one progress line every long command shows.
//
// On a terminal (stderr is a TTY) a line redraws in place, "\r\x1b[K" first:
//   ⠹ training the evidence for C18: attn experiment scale, seed 2 of 3 (7 s)
// with a spinner that turns on its own thread, so a step that reports nothing for
// 20 s still shows that it works; the line is erased when the work ends (clear(),
// or the destructor). Where stderr is not a terminal nothing is drawn, unless
// `plain_every` is set: then the text is printed as a plain line at most that often,
// for logs of long runs. Nothing goes to stdout, so the command's output (text,
// --json, CSV) is the same with or without it.
//
//   attn::cli::ProgressLine p;           // on if stderr is a TTY
//   p.show("measuring the FMA peak");    // draws (and keeps the spinner turning)
//   ...
//   p.clear();                           // before printing the results
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

namespace attn::cli {

class ProgressLine {
public:
    struct Options {
        bool on;                                   // draw at all (default: stderr is a TTY)
        std::chrono::milliseconds delay{0};        // draw only once the work has taken this long
        std::chrono::seconds plain_every{0};       // not a TTY: a plain line this often (0: never)
        bool elapsed = true;                       // " (12 s)" after the text
    };
    ProgressLine();
    explicit ProgressLine(Options o);
    ~ProgressLine();
    ProgressLine(const ProgressLine&) = delete;
    ProgressLine& operator=(const ProgressLine&) = delete;

    // The text of the line from now on (thread-safe; throttled to one redraw per 100 ms).
    void show(std::string_view text);
    // The same with a count, its rate and the time left, measured from the first count of
    // this total: "training · 40/300 steps, 33.5 steps/s, ETA 8 s".
    void show(std::string_view text, int64_t done, int64_t total, std::string_view unit);
    // Erases the line (if drawn) and stops the spinner until the next show().
    void clear();
    bool on() const { return opt_.on; }

private:
    void draw_locked(bool force);
    void tick();
    Options opt_;
    std::mutex m_;
    std::condition_variable cv_;
    std::thread ticker_;
    std::string text_;
    bool active_ = false, drawn_ = false, quit_ = false;
    int frame_ = 0;
    std::chrono::steady_clock::time_point t0_, last_;
    int64_t count_total_ = -1, count_first_ = 0;  // the counted stage: its total, its first count
    std::chrono::steady_clock::time_point count_t0_;
};

// True when stderr is a terminal.
bool stderr_is_tty();

// A duration for people: "8 s", "3m05s", "1h02m"; "?" when not finite or negative.
std::string seconds_text(double s);

}  // namespace attn::cli
