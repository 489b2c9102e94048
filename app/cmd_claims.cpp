// `attn claims [ID]`: the scorecard of the source's 44 claims. Each verdict is
// read from the lessons' records by the rule of docs/claims.md (lessons/scorecard.hpp),
// so it is the tour's verdict by construction; this command runs every lesson without
// printing it, once per binary, seed and language: the result is cached (see cache_dir
// below), so a second `attn claims` or `attn claims C18` prints at once. Without a cache,
// `attn claims C18` runs only the lessons that cite C18.
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "attn/core/errors.hpp"
#include "attn/core/utf8.hpp"
#include "attn/io/dump.hpp"
#include "command.hpp"
#include "lang_option.hpp"
#include "lesson.hpp"
#include "options.hpp"
#include "progress.hpp"
#include "scorecard.hpp"

namespace {

using attn::lessons::ClaimScore;
using attn::lessons::Lang;
using attn::lessons::format_in;
using attn::lessons::translate;

struct ClaimsFlags {
    std::string id, lang;
    uint64_t seed = 0;
    bool live = false;  // train the training verdicts' runs instead of reading the stored ones
    attn::cli::JsonOut json;
};

// `text` wrapped at `width` after a first-line prefix; continuation lines get `indent` spaces.
std::string hanging(std::string_view first, std::string_view text, int width, size_t indent) {
    std::string out;
    const auto lines = attn::lessons::wrap_text_lines(text, width - static_cast<int>(indent));
    for (size_t i = 0; i < lines.size(); ++i)
        out += (i == 0 ? std::string(first) : std::string(indent, ' ')) + lines[i] + "\n";
    return out;
}

std::string pad(const std::string& s, int w) {
    return s + std::string(static_cast<size_t>(std::max(0, w - attn::display_width(s))), ' ');
}

// A reason cut to at most `max_lines` wrapped lines (an ellipsis marks the cut).
std::string short_reason(const std::string& reason, int width, int max_lines) {
    auto lines = attn::lessons::wrap_text_lines(reason, width);
    if (static_cast<int>(lines.size()) <= max_lines) return reason;
    std::string s;
    for (int i = 0; i < max_lines; ++i) s += (i ? " " : "") + lines[static_cast<size_t>(i)];
    return s + " \u2026";
}

void print_row(const ClaimScore& s, Lang lang) {
    const std::string verdict(translate(lang, claim_verdict_name(s.verdict)));
    const size_t indent = 6;
    std::cout << hanging(pad(s.claim->id, 5) + " ",
                         verdict + std::string(translate(lang, ": ")) + std::string(translate(lang, s.claim->says)), 80,
                         indent);
    std::cout << hanging(std::string(indent, ' '), format_in(lang, "why: {}", short_reason(s.reason, 80 - 8, 2)), 80,
                         indent);
    std::cout << hanging(std::string(indent, ' '),
                         format_in(lang, "see: {} · source: {}", s.command, claim_where(*s.claim, lang)), 80, indent);
}

void print_one(const ClaimScore& s, Lang lang) {
    std::cout << format_in(lang, "Claim {}, in our words (not the article's sentence):", s.claim->id) << "\n";
    std::cout << hanging("  ", translate(lang, s.claim->says), 80, 2);
    std::cout << hanging("", format_in(lang, "Where the source says it: {}.", claim_where(*s.claim, lang)), 80, 2);
    std::cout << "\n"
              << hanging("",
                         format_in(lang, "Verdict: {}. {}", translate(lang, claim_verdict_name(s.verdict)), s.reason),
                         80, 2);
    std::cout << hanging("", format_in(lang, "Shown by: {}", s.command), 80, 2);
    if (s.evidence.empty()) return;
    std::cout << "\n" << translate(lang, "Everything the tour records on it:") << "\n";
    for (const auto& e : s.evidence)
        std::cout << hanging(fmt::format("  {} ", pad(format_in(lang, "lesson {}", e.lesson), 9)),
                             fmt::format("[{}] {}", translate(lang, e.kind), e.text), 80, 12);
}

// ---------------------------------------------------------------- the cache
// The scorecard takes a whole tour of computing (the training verdicts above all), and it is
// the same for the same binary, seed and language: it is kept in a file keyed by all three,
// $ATTN_CACHE_DIR (else $XDG_CACHE_HOME/attn, else ~/.cache/attn)/claims-KEY.json, written
// whole (temp + rename). A rebuilt binary has another key, so a cache never outlives its code;
// an unreadable or foreign file is ignored and computed again. ATTN_CACHE_DIR set but empty:
// no cache.
std::optional<std::filesystem::path> cache_dir() {
    namespace fs = std::filesystem;
    if (const char* d = std::getenv("ATTN_CACHE_DIR")) {
        if (*d == '\0') return std::nullopt;
        return fs::path(d);
    }
    if (const char* x = std::getenv("XDG_CACHE_HOME"); x != nullptr && *x != '\0') return fs::path(x) / "attn";
    if (const char* h = std::getenv("HOME"); h != nullptr && *h != '\0') return fs::path(h) / ".cache" / "attn";
    return std::nullopt;
}

// What the scorecard depends on: the binary (its path, size and time), the seed, the language.
std::string cache_key(uint64_t seed, Lang lang, bool live) {
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (ec) return {};
    const auto size = fs::file_size(exe, ec);
    if (ec) return {};
    const auto time = fs::last_write_time(exe, ec).time_since_epoch().count();
    if (ec) return {};
    const std::string id = fmt::format("{}|{}|{}|{}|{}|{}", exe.string(), size, time, seed,
                                       attn::lessons::lang_name(lang), live ? "live" : "stored");
    return fmt::format("{:016x}", std::hash<std::string>{}(id));
}

// The scorecard's records (attn-claims "claims") from the cache, when it holds this key's.
std::optional<nlohmann::json> cached_scores(const std::string& key) {
    const auto dir = cache_dir();
    if (key.empty() || !dir) return std::nullopt;
    try {
        const auto j = nlohmann::json::parse(attn::read_file((*dir / ("claims-" + key + ".json")).string()));
        if (j.value("key", std::string()) != key || !j.contains("claims") || !j["claims"].is_array() ||
            j["claims"].size() != attn::lessons::claim_registry().size())
            return std::nullopt;
        return j["claims"];
    } catch (const std::exception&) {
        return std::nullopt;  // no file, or not ours: compute
    }
}

void store_scores(const std::string& key, const nlohmann::json& claims) {
    const auto dir = cache_dir();
    if (key.empty() || !dir) return;
    try {
        std::filesystem::create_directories(*dir);
        attn::write_file_atomic((*dir / ("claims-" + key + ".json")).string(),
                                nlohmann::json{{"key", key}, {"claims", claims}}.dump());
    } catch (const std::exception&) {
        // a cache that cannot be written only costs the next run its time
    }
}

// A scorecard entry back from its JSON record (claim_score_json), for printing.
ClaimScore score_from_json(const nlohmann::json& j) {
    ClaimScore s;
    s.claim = attn::lessons::find_claim(j.at("id").get<std::string>());
    const std::string v = j.at("verdict").get<std::string>();
    for (attn::lessons::ClaimVerdict k : attn::lessons::all_claim_verdicts())
        if (v == attn::lessons::claim_verdict_name(k)) s.verdict = k;
    if (j.at("basis").is_string()) s.basis = j.at("basis").get<std::string>();
    s.reason = j.at("reason").get<std::string>();
    s.command = j.at("command").get<std::string>();
    s.lessons = j.at("lessons").get<std::vector<int>>();
    s.decided_by = j.at("decided_by").get<std::vector<std::string>>();
    for (const auto& e : j.at("evidence"))
        s.evidence.push_back({e.at("kind").get<std::string>(), e.at("text").get<std::string>(),
                              e.at("lesson").get<int>(),
                              e.at("command").get<std::string>(), e.at("key").get<std::string>()});
    return s;
}

// Every claim's score: from the cache when it holds them, else computed (with a progress line on
// a terminal) and stored. `only`: the claim to keep (empty: all).
std::vector<ClaimScore> scores_for(const attn::lessons::RunOptions& base, const std::string& only, Lang lang,
                                   bool live) {
    const std::string key = cache_key(base.seed, lang, live);
    std::vector<ClaimScore> all;
    if (const auto cached = cached_scores(key)) {
        for (const auto& j : *cached) all.push_back(score_from_json(j));
    } else {
        attn::lessons::RunOptions opt = base;
        // a progress line on a terminal: the lesson whose verdicts are computed, and what it trains
        attn::cli::ProgressLine progress;
        std::string at;
        if (progress.on())
            opt.progress = [&](std::string_view what) {
                progress.show(what.empty() ? at : at + " \u00b7 " + std::string(what));
            };
        // one claim: only the lessons that cite it (each lesson lists every claim it records); the
        // whole scorecard: every lesson, kept for the next run
        std::vector<std::string> ids;
        if (!only.empty()) ids.push_back(only);
        all = attn::lessons::compute_scorecard(opt, ids, [&](int i, int n, const attn::lessons::Lesson& l) {
            at = format_in(lang, "computing verdicts: lesson {} ({}/{})", l.number, i + 1, n);
            progress.show(at);
        });
        progress.clear();
        if (!only.empty()) return all;
        nlohmann::json arr = nlohmann::json::array();
        for (const auto& s : all) arr.push_back(attn::lessons::claim_score_json(s, lang));
        store_scores(key, arr);
    }
    if (only.empty()) return all;
    std::vector<ClaimScore> out;
    for (ClaimScore& s : all)
        if (s.claim->id == only) out.push_back(std::move(s));
    return out;
}

int run_claims(ClaimsFlags& f) {
    const Lang lang = attn::cli::resolve_lang(f.lang);
    std::string only;
    if (!f.id.empty()) {
        const auto* c = attn::lessons::find_claim(f.id);
        if (c == nullptr)
            throw attn::InputError(format_in(lang, "claims: no claim '{}'; the ids are C1 to C{}", f.id,
                                             attn::lessons::claim_registry().size()));
        only = c->id;
    }
    attn::lessons::RunOptions opt;
    opt.seed = f.seed;
    opt.lang = lang;
    attn::cli::require_json_writable(f.json);
    // the training verdicts: the stored quick runs (seconds), or trained here (--live, minutes)
    attn::lessons::set_evidence_source(f.live ? attn::lessons::EvidenceSource::live
                                              : attn::lessons::EvidenceSource::stored);
    const auto scores = scores_for(opt, only, lang, f.live);
    if (f.json.given()) {
        nlohmann::json arr = nlohmann::json::array();
        for (const auto& s : scores) arr.push_back(attn::lessons::claim_score_json(s, lang));
        nlohmann::json counts = nlohmann::json::object();
        for (const auto& [v, n] : attn::lessons::verdict_counts(scores))
            counts[attn::lessons::claim_verdict_name(v)] = n;
        attn::cli::write_json(f.json,
                              nlohmann::json{{"seed", f.seed},
                                             {"lang", attn::lessons::lang_name(lang)},
                                             {"training_runs", f.live ? "live" : "stored"},
                                             {"counts", counts},
                                             {"claims", arr}},
                              "attn-claims", 1);
        if (f.json.to_stdout()) return 0;
    }
    if (!f.id.empty()) {
        print_one(scores.front(), lang);
        return 0;
    }
    std::cout << hanging("",
                         translate(lang, "The 44 claims of the two source articles, each in our words, with the "
                                         "verdict the tour reaches, the reason, the command that shows it and where "
                                         "the source says it. `attn claims C18` shows one claim in full."),
                         80, 0)
              << hanging("",
                         translate(lang, f.live ? "The training verdicts were trained here, on the seeds the tour uses."
                                                : "The training verdicts read the quick runs stored in data/evidence, "
                                                  "the seeds the tour trains; --live trains them here again."),
                         80, 0)
              << "\n";
    for (const auto& s : scores) print_row(s, lang);
    std::cout << "\n" << attn::lessons::scorecard_short(scores, lang, 80);
    return 0;
}

const attn::cli::Command claims_cmd{
    "claims", "The scorecard: every claim of the source with its verdict, reason and command", 4,
    [](CLI::App& sub) -> attn::cli::Runner {
        auto f = std::make_shared<ClaimsFlags>();
        sub.add_option("id", f->id, "One claim to show in full (C1 to C44)")->type_name("ID");
        sub.add_option("--seed", f->seed, "Seed of the lessons' random tensors (the verdicts do not depend on it)")
            ->capture_default_str()
            ->check(attn::cli::seed_validator());
        attn::cli::add_json(sub, f->json, "attn-claims: every claim with its verdict, reason and command");
        sub.add_flag("--live", f->live,
                     "Train the training verdicts' quick runs here (minutes) instead of reading the stored ones in "
                     "data/evidence (the same seeds and sizes; a test keeps their verdicts equal)");
        attn::cli::add_lang_option(sub, f->lang);
        return [f] { return run_claims(*f); };
    }};

}  // namespace
