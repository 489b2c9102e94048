// The evidence of the training verdicts: experiment runs per evidence seed (live or stored), stored runs,
// and how a verdict over seeds is printed (task, table of means and ranges, verdict).
#include <algorithm>
#include <atomic>
#include <charconv>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "attn/io/data_files.hpp"
#include "attn/io/dump.hpp"
#include "attn/io/guards.hpp"
#include "context_internal.hpp"
#include "lesson.hpp"

namespace attn::lessons {

const std::vector<uint64_t>& evidence_seeds() {
    static const std::vector<uint64_t> s{0, 1, 2};
    return s;
}

namespace {
std::atomic<EvidenceSource> g_evidence_source{EvidenceSource::live};

// The stored quick run of `e` on `seed`, when the source is stored and data/evidence has it.
std::optional<ExperimentResult> stored_quick_run(const ExperimentInfo& e, uint64_t seed) {
    if (g_evidence_source.load() != EvidenceSource::stored) return std::nullopt;
    const StoredEvidence* ev = stored_evidence(quick_evidence_file(e.name));
    if (ev == nullptr || ev->experiment != e.name || ev->size != ExperimentSize::Quick) return std::nullopt;
    for (size_t i = 0; i < ev->seeds.size() && i < ev->runs.size(); ++i)
        if (ev->seeds[i] == seed) return ev->runs[i];
    return std::nullopt;
}
}  // namespace

void set_evidence_source(EvidenceSource s) { g_evidence_source.store(s); }
EvidenceSource evidence_source() { return g_evidence_source.load(); }
std::string quick_evidence_file(std::string_view name) { return std::string(name) + "-quick.json"; }

const ExperimentResult& evidence_run(const ExperimentInfo& e, uint64_t seed, const ExperimentProgress& progress) {
    static std::mutex m;
    static std::map<std::pair<std::string, uint64_t>, ExperimentResult> cache;
    const std::lock_guard<std::mutex> lock(m);
    const auto key = std::make_pair(e.name, seed);
    auto it = cache.find(key);
    if (it == cache.end()) {
        if (auto stored = stored_quick_run(e, seed)) {
            it = cache.emplace(key, std::move(*stored)).first;
        } else {
            ExperimentConfig qc;
            qc.size = ExperimentSize::Quick, qc.seeds = 1, qc.seed = seed;
            it = cache.emplace(key, e.run(qc, progress ? progress : ExperimentProgress{})).first;
        }
    }
    return it->second;
}

std::vector<SeedVerdict> seed_verdicts(const ExperimentInfo& e, std::string_view claim) {
    std::vector<SeedVerdict> out;
    for (uint64_t seed : evidence_seeds()) {
        const ExperimentResult& r = evidence_run(e, seed);
        size_t k = 0;
        for (const Verdict& v : r.verdicts)
            if (v.claim == claim) out.push_back({seed, k++, v});
    }
    return out;
}

void LessonContext::experiment_claim(const ExperimentInfo& e, std::string_view claim, std::string_view otherwise) {
    const std::string command = "attn experiment " + e.name;
    const size_t nseeds = evidence_seeds().size();
    for (size_t i = 0; i < nseeds; ++i) {  // the training runs (each once per process), with a progress line
        busy(f("training the evidence for {}: {}, seed {} of {}", claim, command, i + 1, nseeds));
        evidence_run(e, evidence_seeds()[i]);
    }
    idle();
    const std::vector<SeedVerdict> all = seed_verdicts(e, claim);
    if (all.empty()) return unmeasured(claim, otherwise);
    // one verdict of the experiment on this claim at a time (an experiment may judge a claim twice)
    for (size_t k = 0;; ++k) {
        std::vector<const SeedVerdict*> per;
        for (const SeedVerdict& s : all)
            if (s.index == k) per.push_back(&s);
        if (per.empty()) break;
        readable_verdict(claim, command, per, nseeds);
    }
}

const StoredEvidence* stored_evidence(std::string_view file, std::string* why) {
    static std::mutex m;
    static std::map<std::string, std::pair<std::optional<StoredEvidence>, std::string>> cache;
    const std::lock_guard<std::mutex> lock(m);
    const std::string rel = "evidence/" + std::string(file);
    auto it = cache.find(rel);
    if (it == cache.end()) {
        std::optional<StoredEvidence> ev;
        std::string reason;
        if (const auto path = find_data(rel)) {
            try {
                ev = evidence_from_json(parse_json(read_file(*path), "attn-evidence"));
            } catch (const std::exception& e) {
                reason = *path + ": " + e.what();
            }
        } else {
            reason = "data/" + rel + " is not found";
        }
        it = cache.emplace(rel, std::make_pair(std::move(ev), reason)).first;
    }
    if (why != nullptr) *why = it->second.second;
    return it->second.first ? &*it->second.first : nullptr;
}

void LessonContext::stored_claim(const ExperimentInfo& e, std::string_view claim, std::string_view file, size_t which,
                                 std::string_view otherwise) {
    std::string why;
    const StoredEvidence* ev = stored_evidence(file, &why);
    if (ev != nullptr && ev->experiment != e.name) {
        why = "data/evidence/" + std::string(file) + " holds runs of " + ev->experiment + ", not " + e.name;
        ev = nullptr;
    }
    if (ev == nullptr) {
        para(f("(The stored run for {} cannot be used ({}); the live quick runs judge it instead.)", claim, why));
        return experiment_claim(e, claim, otherwise);
    }
    std::vector<SeedVerdict> all;
    for (size_t i = 0; i < ev->runs.size(); ++i) {
        size_t k = 0;
        for (const Verdict& v : ev->runs[i].verdicts)
            if (v.claim == claim && k++ == which) all.push_back({ev->seeds[i], which, v});
    }
    if (all.empty()) return unmeasured(claim, otherwise);
    std::vector<const SeedVerdict*> per;
    for (const SeedVerdict& s : all) per.push_back(&s);
    readable_verdict(claim, fmt::format("attn experiment {} --{}", e.name, experiment_size_name(ev->size)), per,
                     ev->runs.size(), ev, file);
}

// A number of an evidence table: a JSON number, or a percentage the experiment wrote as text
// ("59.4%"); nullopt for a word ("never", "yes").
static std::optional<std::pair<double, bool>> evidence_number(const nlohmann::json& v) {
    if (v.is_number()) return std::make_pair(v.get<double>(), false);
    if (!v.is_string()) return std::nullopt;
    const std::string s = v.get<std::string>();
    if (s.size() < 2 || s.back() != '%') return std::nullopt;
    double x = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size() - 1, x);
    if (ec != std::errc() || end != s.data() + s.size() - 1) return std::nullopt;
    return std::make_pair(x, true);
}

// A training verdict's evidence table over its seeds: a cell that is a number on every seed
// becomes "mean (min–max)" (just the mean when they agree; percentages stay percentages); a
// cell that is a number on some seeds and a word on the others ("never") counts the seeds:
// `some(mean of the numbers, k, n, the word)`; a word on every seed is the first seed's.
using SomeSeeds = std::function<std::string(const std::string&, size_t, size_t, const std::string&)>;
static Table evidence_over_seeds(const std::vector<const SeedVerdict*>& per, const SomeSeeds& some) {
    const ExperimentTable& first = per.front()->verdict.evidence;
    Table t;
    t.columns = first.columns;
    t.formats.assign(t.columns.size(), "{:.3g}");
    for (size_t r = 0; r < first.rows.size(); ++r) {
        std::vector<nlohmann::json> row = first.rows[r];
        for (size_t c = 0; c < row.size(); ++c) {
            std::vector<double> xs;
            bool pct = false, missing = false;
            std::string word;
            for (const SeedVerdict* s : per) {
                const ExperimentTable& ev = s->verdict.evidence;
                if (r >= ev.rows.size() || c >= ev.rows[r].size()) {
                    missing = true;
                    break;
                }
                const auto x = evidence_number(ev.rows[r][c]);
                if (!x) {
                    if (word.empty() && ev.rows[r][c].is_string()) word = ev.rows[r][c].get<std::string>();
                    continue;
                }
                xs.push_back(x->first);
                pct = x->second;
            }
            if (missing || xs.empty() || per.size() < 2) continue;
            double sum = 0;
            for (double x : xs) sum += x;
            const double mean = sum / static_cast<double>(xs.size());
            const auto [lo, hi] = std::minmax_element(xs.begin(), xs.end());
            const std::string mean_text = pct ? fmt::format("{:.1f}%", mean) : fmt::format("{:.3g}", mean);
            if (xs.size() != per.size()) {  // reached on some seeds only: say on how many
                if (word.empty()) continue;
                row[c] = some(mean_text, xs.size(), per.size(), word);
            } else if (pct) {
                row[c] = *lo == *hi ? mean_text : fmt::format("{:.1f}% ({:.1f}\u2013{:.1f}%)", mean, *lo, *hi);
            } else {
                row[c] = *lo == *hi ? nlohmann::json(mean)
                                    : nlohmann::json(fmt::format("{:.3g} ({:.3g}\u2013{:.3g})", mean, *lo, *hi));
            }
        }
        t.add(row);
    }
    return t;
}

void LessonContext::readable_verdict(std::string_view claim, const std::string& command,
                                     const std::vector<const SeedVerdict*>& per, size_t nseeds,
                                     const StoredEvidence* stored, std::string_view stored_file) {
    // the seeds agree when every one of them reached a verdict on the claim, the same one
    bool agree = per.size() == nseeds;
    for (const SeedVerdict* s : per) agree = agree && s->verdict.kind == per.front()->verdict.kind;
    const Verdict& first = per.front()->verdict;
    if (first.task.empty())  // a programming error: every training verdict the tour prints reads as task, table, words
        throw std::logic_error("lesson: attn experiment's verdict on " + std::string(claim) + " has no task sentence");
    // the plain line: its template and its word arguments ("never") in the run's language
    const auto plain = [this](const Verdict& v) {
        std::vector<std::string> args;
        for (const std::string& a : v.plain_args) args.push_back(tr(a));
        return fv(v.plain, args);
    };
    std::string seeds;
    std::vector<int> seed_ids;
    for (const SeedVerdict* s : per) {
        seeds += (seeds.empty() ? "" : ", ") + std::to_string(s->seed);
        seed_ids.push_back(static_cast<int>(s->seed));
    }
    const std::string seed_ranges = number_ranges(seed_ids);
    // the framing (how such a table reads) once per lesson; the full reasoning is `attn claims ID`'s
    if (stored == nullptr && framed_)
        para(f("The evidence for {}: {}. `{}` at its quick size, seeds {}, read as above.", claim, tr(first.task),
               command, seeds));
    else if (stored == nullptr)
        para(f("The evidence for {}: {}. `{}` trains it live at its quick size on seeds {}; in the table each "
               "number is the mean over those seeds with its range in brackets (the words are seed {}'s run). "
               "The verdict follows the rule of docs/claims.md; `attn claims {}` gives its full reasoning.",
               claim, tr(first.task), command, seeds, per.front()->seed, claim));
    else  // the day, not the time: the run's place in history, not a timestamp to compare
        para(f("The evidence for {}: {}. This verdict rests on a stored run, too long to train while you read: "
               "data/evidence/{}, made by `{}` at its {} size on seeds {} ({}, `{}`, `{}` kernels); in the table each "
               "number is the mean over those seeds with its range in brackets (the words are seed {}'s run), and "
               "a test reruns seed {} and compares.",
               claim, tr(first.task), stored_file, command, tr(experiment_size_name(stored->size)), seed_ranges,
               stored->made.date.substr(0, 10), stored->made.processor, stored->made.kernels, per.front()->seed,
               per.front()->seed));
    framed_ = true;
    table(fmt::format("evidence_{}", claim),
          evidence_over_seeds(per, [this](const std::string& mean, size_t k, size_t n, const std::string& word) {
              return f("{} on {}/{} seeds, {} on the others", mean, k, n, tr(word));
          }));
    const std::string stmt = tr(first.statement);
    if (!agree) {
        // the seeds grouped by verdict (in order of first appearance), each group with its first seed's words
        std::vector<std::pair<VerdictKind, std::vector<const SeedVerdict*>>> groups;
        for (const SeedVerdict* s : per) {
            auto g =
                std::find_if(groups.begin(), groups.end(), [&](const auto& x) { return x.first == s->verdict.kind; });
            if (g == groups.end()) groups.push_back({s->verdict.kind, {s}});
            else g->second.push_back(s);
        }
        std::string each;
        for (const auto& [kind, seeds_of] : groups) {
            std::vector<int> ids;
            for (const SeedVerdict* s : seeds_of) ids.push_back(static_cast<int>(s->seed));
            each += (each.empty() ? "" : "; ") +
                    (seeds_of.size() == 1 ? f("{} on seed {} ({})", tr(verdict_name(kind)), ids.front(),
                                              plain(seeds_of.front()->verdict))
                                          : f("{} on seeds {} (seed {}: {})", tr(verdict_name(kind)),
                                              number_ranges(ids), ids.front(), plain(seeds_of.front()->verdict)));
        }
        if (stored == nullptr)
            inconclusive(claim, f("{}: the {} training seeds disagree ({}). `{} --seeds 5` trains more seeds.", stmt,
                                  per.size(), each, command));
        else
            inconclusive(claim, f("{}: the {} stored seeds disagree ({}). `{} --seeds {}` reruns them.", stmt,
                                  per.size(), each, command, per.size()));
        record_["inconclusive"].back()["command"] = command;
        if (stored != nullptr) record_["inconclusive"].back()["stored"] = "data/evidence/" + std::string(stored_file);
        return;
    }
    const VerdictKind kind = first.kind;
    verdict_line(kind, claim,
                 f("{}: {} ({} on all {} training seeds; `{}` reruns it)", stmt, plain(first), tr(verdict_name(kind)),
                   per.size(), command),
                 command);
    if (stored != nullptr) record_[record_key(kind)].back()["stored"] = "data/evidence/" + std::string(stored_file);
}

}  // namespace attn::lessons
