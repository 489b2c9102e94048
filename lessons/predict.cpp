// Predictions and exercises: the reader guesses a number before the lesson shows it; the closing exercise line.
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "context_internal.hpp"
#include "lesson.hpp"
#include "text_wrap.hpp"

namespace attn::lessons {

std::optional<double> parse_guess(std::string_view text) {
    std::string s;
    for (char c : text)
        if (c != ' ' && c != '\t' && c != '\r' && c != ',' && c != '_') s += c;
    if (s.empty()) return std::nullopt;
    double scale = 1;
    switch (s.back()) {
        case 'k': case 'K': scale = 1e3; s.pop_back(); break;
        case 'M': scale = 1e6; s.pop_back(); break;
        case 'G': scale = 1e9; s.pop_back(); break;
        default: break;
    }
    const auto number = [](std::string_view t) -> std::optional<double> {
        double x = 0;
        const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), x);
        if (t.empty() || ec != std::errc() || end != t.data() + t.size() || !std::isfinite(x)) return std::nullopt;
        return x;
    };
    const size_t slash = s.find('/');
    if (slash != std::string::npos) {  // a fraction: 1/3
        const auto a = number(std::string_view(s).substr(0, slash)), b = number(std::string_view(s).substr(slash + 1));
        if (!a || !b || *b == 0) return std::nullopt;
        return *a / *b * scale;
    }
    const auto x = number(s);
    if (!x) return std::nullopt;
    return *x * scale;
}

GuessJudgement judge_guess(double guess, double actual, Closeness rule) {
    GuessJudgement j;
    j.abs_error = std::fabs(guess - actual);
    j.rel_error = actual != 0 ? j.abs_error / std::fabs(actual)
                              : (guess == 0 ? 0.0 : std::numeric_limits<double>::infinity());
    if (rule.abs_tol > 0) {
        j.verdict = j.abs_error <= rule.abs_tol ? "close" : j.abs_error <= 4 * rule.abs_tol ? "near" : "far";
        return j;
    }
    // relative: within 10% is close; the same sign and within a factor of 2 is near
    const bool same_sign = (guess > 0 && actual > 0) || (guess < 0 && actual < 0);
    const double ratio = same_sign ? std::max(guess / actual, actual / guess) : 0.0;
    j.verdict = j.rel_error <= 0.1 ? "close" : same_sign && ratio <= 2 ? "near" : "far";
    return j;
}

std::string guess_number(double x) {
    if (std::isfinite(x) && x == std::floor(x) && std::fabs(x) < 1e15)
        return fmt::format("{}", static_cast<int64_t>(x));
    return fmt::format("{:.4g}", x);
}

void LessonContext::predict(std::string_view id, std::string_view question_en, double actual, Closeness rule) {
    ++predictions_;
    const std::string question = text(question_en);
    nlohmann::json entry = {{"id", id}, {"question", question}, {"actual", actual}, {"answer", nullptr}};
    const bool asking = opt_.ask && !opt_.json && !input_done_ && opt_.show_predictions;
    if (!opt_.json && opt_.show_predictions) {
        line_item();
        print(paint(wrap_hanging(f("Predict: {}", question), opt_.width, "  ? ", "    "), kYellow));
    }
    std::optional<double> guess;
    while (asking) {
        print(fmt::format("    {} ", tr("your guess (Enter skips):")));
        out_.flush();
        const std::optional<std::string> line = opt_.ask();
        if (!line) {  // the end of input: no later question waits
            input_done_ = true;
            print("\n");
            break;
        }
        if (line->find_first_not_of(" \t\r") == std::string::npos) break;  // Enter alone: skipped
        guess = parse_guess(*line);
        if (guess) break;
        print(fmt::format("    {}\n", tr("(not a number: digits, with k, M or G or a fraction like 1/3)")));
    }
    if (guess) {
        ++answered_;
        const GuessJudgement j = judge_guess(*guess, actual, rule);
        (j.verdict == "close" ? close_ : j.verdict == "near" ? near_ : far_)++;
        entry["answer"] = *guess;
        entry["verdict"] = j.verdict;
        entry["abs_error"] = j.abs_error;
        if (std::isfinite(j.rel_error)) entry["rel_error"] = j.rel_error;
        const std::string off = rule.abs_tol > 0 || !std::isfinite(j.rel_error)
                                    ? f("off by {}", guess_number(j.abs_error))
                                    : f("off by {:.0f}%", 100 * j.rel_error);
        const std::string words = j.verdict == "close" ? tr("close to it")
                                  : j.verdict == "near" ? tr("the right size, not close")
                                                        : tr("far off: worth a second look at why");
        print(paint(wrap_hanging(f("live: {} \u00b7 yours: {} \u00b7 {}: {}.", guess_number(actual),
                                   guess_number(*guess), off, words),
                                 opt_.width, "    \u2192 ", "      "),
                    j.verdict == "close" ? kGreen : kYellow));
    }
    record_["predictions"].push_back(std::move(entry));
}

void LessonContext::exercise(std::string_view name, std::string_view second) {
    after_block_ = true;
    const std::string said =
        second.empty() ? f("Your turn: `attn exercise {}` writes this step's inputs and task; "
                           "`attn exercise {} --check ANSWER` grades what you compute.",
                           name, name)
                       : f("Your turn: `attn exercise {}` and `attn exercise {}` write these steps' inputs and tasks; "
                           "`--check ANSWER` after either grades what you compute.",
                           name, second);
    record_["exercises"].push_back(std::string(name));
    if (!second.empty()) record_["exercises"].push_back(std::string(second));
    print(fmt::format("\n{}", wrap_hanging(said, opt_.width, "  \u270e ", "    ")));
}

}  // namespace attn::lessons
