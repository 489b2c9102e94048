#include "progress.hpp"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sys/ioctl.h>
#include <unistd.h>

#include <fmt/format.h>

#include "attn/core/utf8.hpp"
#include "attn/viz/heatmap.hpp"

namespace attn::cli {
namespace {

// The spinner's frames: braille dots where the locale says UTF-8, else ASCII.
bool utf8_locale() {
    for (const char* var : {"LC_ALL", "LC_CTYPE", "LANG"}) {
        const char* v = std::getenv(var);
        if (v == nullptr || *v == '\0') continue;
        const std::string s = v;
        return s.find("UTF-8") != std::string::npos || s.find("utf8") != std::string::npos ||
               s.find("UTF8") != std::string::npos || s.find("utf-8") != std::string::npos;
    }
    return false;
}

const char* frame(int k) {
    static const char* const dots[] = {"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"};
    static const char* const ascii[] = {"|", "/", "-", "\\"};
    static const bool utf8 = utf8_locale();
    return utf8 ? dots[k % 10] : ascii[k % 4];
}

// `text` cut to `cols` display columns ("…" last when cut): a line longer than the
// terminal would wrap, and "\r" would then redraw only its last row.
std::string fit(const std::string& text, int cols) {
    if (cols <= 0 || display_width(text) <= cols) return text;
    std::string out;
    for (size_t i = 0; i < text.size();) {
        std::string next = out;
        utf8_append(next, utf8_next(text, i));
        if (display_width(next) > cols - 1) break;
        out = std::move(next);
    }
    return out + "…";
}

int stderr_columns() {
    winsize ws{};
    if (ioctl(fileno(stderr), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
    return 80;
}

}  // namespace

bool stderr_is_tty() { return isatty(fileno(stderr)) != 0; }

std::string seconds_text(double s) {
    if (!(s >= 0) || !std::isfinite(s)) return "?";
    if (s < 60) return fmt::format("{:.0f} s", s);
    if (s < 3600) return fmt::format("{}m{:02d}s", static_cast<int>(s / 60), static_cast<int>(s) % 60);
    return fmt::format("{}h{:02d}m", static_cast<int>(s / 3600), (static_cast<int>(s) / 60) % 60);
}

void ProgressLine::show(std::string_view text, int64_t done, int64_t total, std::string_view unit) {
    const auto now = std::chrono::steady_clock::now();
    double rate = 0;
    {
        const std::lock_guard<std::mutex> lock(m_);
        if (total != count_total_ || done < count_first_) {  // a new stage: the rate counts from here
            count_total_ = total;
            count_first_ = done;
            count_t0_ = now;
        }
        const double secs = std::chrono::duration<double>(now - count_t0_).count();
        if (secs > 0.2 && done > count_first_) rate = static_cast<double>(done - count_first_) / secs;
    }
    std::string line = fmt::format("{} · {}/{} {}", text, done, total, unit);
    if (rate > 0)
        line +=
            fmt::format(", {:.1f} {}/s, ETA {}", rate, unit, seconds_text(static_cast<double>(total - done) / rate));
    show(line);
}

ProgressLine::ProgressLine() : ProgressLine(Options{stderr_is_tty()}) {}

ProgressLine::ProgressLine(Options o) : opt_(o), t0_(std::chrono::steady_clock::now()) {
    last_ = t0_ - std::chrono::hours(1);
    // the spinner turns on its own thread, on a terminal only
    if (opt_.on) ticker_ = std::thread([this] { tick(); });
}

ProgressLine::~ProgressLine() {
    clear();
    if (ticker_.joinable()) {
        {
            const std::lock_guard<std::mutex> lock(m_);
            quit_ = true;
        }
        cv_.notify_all();
        ticker_.join();
    }
}

void ProgressLine::show(std::string_view text) {
    std::fflush(stdout);  // what the command printed so far goes out before the line (the caller's thread)
    const std::lock_guard<std::mutex> lock(m_);
    if (!active_) t0_ = std::chrono::steady_clock::now();
    const bool changed = text != text_;
    text_ = text;
    active_ = true;
    if (opt_.on) {
        draw_locked(false);
    } else if (opt_.plain_every.count() > 0 && changed) {
        const auto now = std::chrono::steady_clock::now();
        if (now - last_ < opt_.plain_every) return;
        last_ = now;
        fmt::print(stderr, "{} ({:.0f} s)\n", text_, std::chrono::duration<double>(now - t0_).count());
        std::fflush(stderr);
    }
}

void ProgressLine::clear() {
    const std::lock_guard<std::mutex> lock(m_);
    active_ = false;
    if (drawn_) {
        fmt::print(stderr, "\r\x1b[K");
        std::fflush(stderr);
        drawn_ = false;
    }
}

void ProgressLine::draw_locked(bool force) {
    if (!opt_.on || !active_) return;
    const auto now = std::chrono::steady_clock::now();
    if (now - t0_ < opt_.delay) return;
    if (!force && now - last_ < std::chrono::milliseconds(100)) return;
    last_ = now;
    const double s = std::chrono::duration<double>(now - t0_).count();
    const std::string tail = opt_.elapsed ? fmt::format(" ({:.0f} s)", s) : "";
    fmt::print(stderr, "\r\x1b[K{} {}{}", frame(frame_++), fit(text_, stderr_columns() - 3 - display_width(tail)),
               tail);
    std::fflush(stderr);
    drawn_ = true;
}

void ProgressLine::tick() {
    std::unique_lock<std::mutex> lock(m_);
    while (!quit_) {
        cv_.wait_for(lock, std::chrono::milliseconds(120));
        if (!quit_) draw_locked(true);
    }
}

}  // namespace attn::cli
