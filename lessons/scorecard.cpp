// The scorecard (scorecard.hpp): verdicts on the claims read from the lessons' records by one rule,
// never typed in.
#include "scorecard.hpp"

#include <algorithm>
#include <cctype>
#include <set>
#include <sstream>

#include <fmt/format.h>

namespace attn::lessons {

namespace {

std::vector<std::string> split_ids(const std::string& s) {
    std::vector<std::string> out;
    size_t i = 0;
    while (i <= s.size()) {
        const size_t j = std::min(s.find(',', i), s.size());
        std::string id = s.substr(i, j - i);
        while (!id.empty() && id.front() == ' ') id.erase(id.begin());
        if (!id.empty()) out.push_back(id);
        i = j + 1;
    }
    return out;
}

// The verdict rule (docs/claims.md, "The verdict rule"): the kinds of evidence in the order in
// which they decide; a kind ranked 9 never decides (a slip: the claim stands).
int rank(const std::string& kind) {
    static const std::map<std::string, int> r{{"error of the source", 0}, {"not supported", 1}, {"failed", 2},
                                              {"inconclusive", 3},        {"qualified", 4},     {"source imprecise", 5},
                                              {"measured", 6},            {"identity", 7},      {"not measured", 8},
                                              {"source slip", 9}};
    const auto it = r.find(kind);
    return it == r.end() ? 9 : it->second;
}

}  // namespace

const char* claim_verdict_name(ClaimVerdict v) {
    switch (v) {
        case ClaimVerdict::supported: return "supported";
        case ClaimVerdict::qualified: return "qualified";
        case ClaimVerdict::not_supported: return "not supported";
        case ClaimVerdict::inconclusive: return "inconclusive";
        case ClaimVerdict::not_measured: return "not measured";
        case ClaimVerdict::source_error: return "error of the source";
        case ClaimVerdict::imprecise: return "imprecise";
    }
    return "?";
}

const std::vector<ClaimVerdict>& all_claim_verdicts() {
    static const std::vector<ClaimVerdict> v{ClaimVerdict::supported,    ClaimVerdict::imprecise,
                                             ClaimVerdict::qualified,    ClaimVerdict::not_supported,
                                             ClaimVerdict::inconclusive, ClaimVerdict::not_measured,
                                             ClaimVerdict::source_error};
    return v;
}

ClaimVerdict verdict_of(const std::vector<ClaimEvidence>& evidence, int* deciding) {
    int best = -1;
    for (size_t i = 0; i < evidence.size(); ++i)
        if (rank(evidence[i].kind) < 9 &&
            (best < 0 || rank(evidence[i].kind) < rank(evidence[static_cast<size_t>(best)].kind)))
            best = static_cast<int>(i);
    if (deciding) *deciding = best;
    if (best < 0) return ClaimVerdict::not_measured;
    const std::string& k = evidence[static_cast<size_t>(best)].kind;
    if (k == "error of the source") return ClaimVerdict::source_error;
    if (k == "not supported") return ClaimVerdict::not_supported;
    // a check that failed (✗): the tour's own evidence went against what it expected, so the
    // claim cannot stand as supported; until the failure is explained it is inconclusive
    if (k == "failed" || k == "inconclusive") return ClaimVerdict::inconclusive;
    if (k == "qualified") return ClaimVerdict::qualified;
    if (k == "source imprecise") return ClaimVerdict::imprecise;
    if (k == "measured" || k == "identity") return ClaimVerdict::supported;
    return ClaimVerdict::not_measured;
}

std::vector<std::string> deciding_keys(const ClaimScore& s) {
    std::vector<std::string> keys;
    int d = -1;
    verdict_of(s.evidence, &d);
    if (d < 0) return keys;
    // a supported claim is decided by every check that held, measured or identity
    const auto level = [](const std::string& kind) { return kind == "identity" ? rank("measured") : rank(kind); };
    const int r = level(s.evidence[static_cast<size_t>(d)].kind);
    for (size_t i = 0; i < s.evidence.size(); ++i)
        if (level(s.evidence[i].kind) == r)
            keys.push_back(s.evidence[i].key);
    return keys;
}

std::vector<ClaimScore> score_claims(const std::vector<nlohmann::json>& records, Lang lang, bool partial) {
    std::map<std::string, std::vector<ClaimEvidence>> ev;
    for (const nlohmann::json& rec : records) {
        const int n = rec.value("number", 0);
        const std::string lesson_cmd = fmt::format("attn lesson {}", n);
        auto take = [&](const char* key, const std::function<std::string(const nlohmann::json&)>& kind) {
            if (!rec.contains(key)) return;
            for (const nlohmann::json& item : rec.at(key)) {
                const std::string cmd = item.value("command", lesson_cmd);
                for (const std::string& id : split_ids(item.value("claim", "")))
                    ev[id].push_back({kind(item), item.value("text", ""), n, cmd});
            }
        };
        take("checks", [](const nlohmann::json& c) {
            return !c.value("ok", false) ? std::string("failed") : c.value("kind", std::string("measured"));
        });
        take("qualified", [](const nlohmann::json&) { return std::string("qualified"); });
        take("not_supported", [](const nlohmann::json&) { return std::string("not supported"); });
        take("inconclusive", [](const nlohmann::json&) { return std::string("inconclusive"); });
        take("unmeasured", [](const nlohmann::json&) { return std::string("not measured"); });
        if (rec.contains("source_errors"))
            for (const nlohmann::json& item : rec.at("source_errors"))
                for (const std::string& id : split_ids(item.value("claim", "")))
                    ev[id].push_back({item.value("severity", std::string("error")) == "error"
                                          ? std::string("error of the source")
                                          : "source " + item.value("severity", std::string("slip")),
                                      item.value("text", "").empty() ? item.value("quote", "") : item.value("text", ""),
                                      n, item.value("command", lesson_cmd)});
    }
    std::vector<ClaimScore> out;
    for (const ClaimInfo& c : claim_registry()) {
        const auto it = ev.find(c.id);
        if (partial && it == ev.end()) continue;
        ClaimScore s;
        s.claim = &c;
        if (it != ev.end()) s.evidence = it->second;
        std::map<std::string, int> seen;
        for (ClaimEvidence& e : s.evidence) {
            std::string kind = e.kind;
            std::replace(kind.begin(), kind.end(), ' ', '-');
            const std::string stem = fmt::format("L{}/{}", e.lesson, kind);
            e.key = fmt::format("{}/{}", stem, ++seen[stem]);
            if (std::find(s.lessons.begin(), s.lessons.end(), e.lesson) == s.lessons.end())
                s.lessons.push_back(e.lesson);
        }
        int d = -1;
        s.verdict = verdict_of(s.evidence, &d);
        if (d >= 0) {
            const ClaimEvidence& e = s.evidence[static_cast<size_t>(d)];
            s.reason = e.text;
            s.command = e.command;
            if (s.verdict == ClaimVerdict::supported) s.basis = e.kind;
            s.decided_by = deciding_keys(s);
        } else {
            s.reason = std::string(translate(lang, "no lesson of the tour tests it"));
            s.command = "attn lessons";
        }
        out.push_back(std::move(s));
    }
    return out;
}

std::vector<ClaimScore> compute_scorecard(RunOptions opt, const std::vector<std::string>& only,
                                          const std::function<void(int, int, const Lesson&)>& progress) {
    opt.json = true;
    opt.pause = nullptr;
    std::vector<Lesson> lessons;
    for (const Lesson& l : all_lessons()) {
        bool cites = only.empty();
        for (const std::string& id : only)
            cites = cites || std::find(l.claims.begin(), l.claims.end(), id) != l.claims.end();
        if (cites) lessons.push_back(l);
    }
    std::vector<nlohmann::json> records;
    std::ostringstream sink;
    for (size_t i = 0; i < lessons.size(); ++i) {
        if (progress) progress(static_cast<int>(i), static_cast<int>(lessons.size()), lessons[i]);
        records.push_back(run_lesson(lessons[i], opt, sink).record);
    }
    std::vector<ClaimScore> all = score_claims(records, opt.lang);
    if (only.empty()) return all;
    std::vector<ClaimScore> out;
    for (ClaimScore& s : all)
        if (std::find(only.begin(), only.end(), s.claim->id) != only.end()) out.push_back(std::move(s));
    return out;
}

std::map<ClaimVerdict, int> verdict_counts(const std::vector<ClaimScore>& scores) {
    std::map<ClaimVerdict, int> n;
    for (ClaimVerdict v : all_claim_verdicts()) n[v] = 0;
    for (const ClaimScore& s : scores) ++n[s.verdict];
    return n;
}

nlohmann::json claim_score_json(const ClaimScore& s, Lang lang) {
    nlohmann::json ev = nlohmann::json::array();
    for (const ClaimEvidence& e : s.evidence)
        ev.push_back(
            {{"key", e.key}, {"kind", e.kind}, {"text", e.text}, {"lesson", e.lesson}, {"command", e.command}});
    nlohmann::json where = nlohmann::json::array();
    for (const auto& [article, section] : s.claim->where) where.push_back({{"article", article}, {"section", section}});
    return {{"id", s.claim->id},
            {"claim", std::string(translate(lang, s.claim->says))},
            {"verdict", claim_verdict_name(s.verdict)},
            {"basis", s.basis.empty() ? nlohmann::json(nullptr) : nlohmann::json(s.basis)},
            {"reason", s.reason},
            {"decided_by", s.decided_by},
            {"command", s.command},
            {"source", claim_where(*s.claim, lang)},
            {"where", where},
            {"lessons", s.lessons},
            {"evidence", ev}};
}

std::string scorecard_short(const std::vector<ClaimScore>& scores, Lang lang, int width) {
    const auto n = verdict_counts(scores);
    std::string out;
    for (ClaimVerdict v : all_claim_verdicts()) {
        std::string ids;
        for (const ClaimScore& s : scores)
            if (s.verdict == v) ids += (ids.empty() ? "" : ", ") + s.claim->id;
        if (ids.empty()) continue;
        const std::string head = format_in(lang, "{} ({}):", translate(lang, claim_verdict_name(v)), n.at(v));
        const auto lines = wrap_text_lines(head + " " + ids, width - 4);
        for (size_t i = 0; i < lines.size(); ++i) out += (i == 0 ? "  " : "    ") + lines[i] + "\n";
    }
    return out;
}

}  // namespace attn::lessons
