// The claim registry and the scorecard (scorecard.hpp): verdicts read from the
// lessons' records by one rule, never typed in.
#include "scorecard.hpp"

#include <algorithm>
#include <cctype>
#include <set>
#include <sstream>

#include <fmt/format.h>

namespace attn::lessons {

namespace {

// Our one-line rendering of each claim (the ids and facts of the claim summary,
// said in our words) and where the source says it.
const std::vector<ClaimInfo>& registry() {
    static const std::vector<ClaimInfo> r{
        {"C1",
         "An RNN compresses its whole past into one fixed-size state, so far tokens fade (errors grow past about "
         "40 tokens).",
         {{1, "1.1"}}},
        {"C2",
         "An RNN runs step by step; attention is matrix products over all positions at once.",
         {{1, "1.1"}, {2, "1"}}},
        {"C3",
         "Attention is a soft lookup: the query asks, keys label, values carry content, every value weighted by "
         "a softmax of the match.",
         {{1, "1.2"}}},
        {"C4", "Any two tokens interact directly, however far apart they are.", {{2, "1"}}},
        {"C5",
         "Q, K and V are linear maps of x [batch, seq, d_model]; Q and K have width d_k, V has width d_v.",
         {{1, "2.1"}, {2, "2.1"}}},
        {"C6", "Q and K must share d_k for the dot product; d_v is free to differ.", {{2, "2.2"}}},
        {"C7", "nn.Linear keeps its weight as [out, in] and computes x·Wᵀ + b.", {{1, "4.2"}}},
        {"C8", "Keeping or dropping the Q/K/V bias is a habit, not a mathematical need.", {{1, "4.2"}}},
        {"C9", "Initialise with Xavier or Kaiming, never with all zeros, and each head on its own.", {{2, "2.1"}}},
        {"C10", "For long inputs d_k may be lowered to save compute, but never below 64.", {{2, "2.2"}}},
        {"C11", "A dot product measures direction, and the vectors' lengths inflate it too.", {{1, "2.2"}}},
        {"C12", "softmax of [0, 3] is about [0.047, 0.953]; of [0, 30], about [0, 1].", {{1, "2.3"}}},
        {"C13",
         "A near one-hot softmax passes almost no gradient, so attention can lock onto one position early and "
         "stay there.",
         {{1, "2.3"}}},
        {"C14", "For independent entries of mean 0 and variance 1, q·k has mean 0 and variance d_k.", {{1, "3.1"}}},
        {"C15",
         "The score's spread for d_k 1, 16, 64, 512 is about 1, 4, 8, 22.6, with ranges of three times that.",
         {{1, "3.1"}}},
        {"C16",
         "exp(24) is about 2.6e10 against exp(0) = 1: unscaled scores at d_k 64 make the softmax nearly "
         "one-hot.",
         {{1, "3.1"}}},
        {"C17", "Dividing by √d_k brings the score variance back to about 1 at any d_k.", {{1, "3.1"}}},
        {"C18", "Without the scaling the model barely trains and its weights sit near 0 or 1.", {{2, "3.1"}}},
        {"C19",
         "Cosine scores stay in [-1, 1] but discard the vectors' lengths, which may carry meaning.",
         {{1, "3.2"}}},
        {"C20", "A fixed divisor such as 10 in place of √d_k trains slightly worse.", {{1, "3.2"}}},
        {"C21",
         "The naive single head at batch 2, seq 6, d_model 16, d_k 16 has the shapes the source lists.",
         {{1, "4.1"}}},
        {"C22", "Scores are Q·Kᵀ, K transposed on its last two dims: not K·Qᵀ, not Q·K.", {{1, "4.1"}, {1, "6.1"}}},
        {"C23", "Padded keys get no weight; the padding mask broadcasts as [batch, 1, seq].", {{1, "4.3"}}},
        {"C24", "The causal mask lets position i see only keys j ≤ i: the upper triangle is masked.", {{1, "4.3"}}},
        {"C25",
         "Masking with -inf before softmax gives exact zeros and rows summing to 1; zeroing weights afterwards "
         "does not.",
         {{1, "4.3"}}},
        {"C26", "Padding is masked on the key side; padded query rows are left to the loss.", {{1, "4.3"}}},
        {"C27",
         "Printing one row of weights (padded ones near 0, the rest summing to 1) is a smoke test for masks.",
         {{1, "4.4"}}},
        {"C28",
         "Usual mask bugs: no causal mask, filling with 0, masking after softmax; -1e9 and -inf differ on a "
         "fully masked row.",
         {{2, "5.1"}, {1, "4.3"}}},
        {"C29",
         "d_model splits into h heads (512 = 8 × 64) that attend apart, and W_o mixes them back.",
         {{1, "5.1"}, {2, "4.1"}}},
        {"C30", "8 heads of 64 cost the same projection parameters and FLOPs as one head of 512.", {{1, "5.1"}}},
        {"C31",
         "Merging heads needs the transpose before the reshape, and .contiguous() after the transpose.",
         {{1, "5.2"}}},
        {"C32",
         "Heads often fail to specialise and learn near-identical patterns; compare each head's mean entropy.",
         {{1, "5.3"}}},
        {"C33",
         "Several heads give the gradient several paths: when some heads stall, the others still learn.",
         {{2, "4.2"}}},
        {"C34",
         "The weights can be read: in the source's sentence about a tired animal, the pronoun looks at the "
         "animal.",
         {{2, "3.2"}}},
        {"C35",
         "bmm wants 3-D inputs while matmul broadcasts, so a wrong rank can run with a wrong meaning; assert "
         "the shapes.",
         {{1, "6.1"}}},
        {"C36",
         "When the loss does not move, check the √d_k scaling first, then a too-large init of W_q and W_k.",
         {{1, "6.2"}}},
        {"C37", "A model that cannot memorise a few dozen random examples has a broken attention.", {{1, "6.2"}}},
        {"C38",
         "Dropout goes on the weights after softmax (p about 0.1, off at inference); p above 0.2 slows "
         "training.",
         {{1, "6.3"}}},
        {"C39",
         "L2-normalised Q and K, log_softmax and loss scaling keep mixed-precision training stable.",
         {{2, "5.2"}}},
        {"C40",
         "Attention memory grows as n²; checkpointing, memory-efficient attention and chunking reduce it.",
         {{2, "6.1"}}},
        {"C41",
         "On GPUs, fuse the scale and the softmax, use tensor cores and stage tiles in shared memory.",
         {{2, "6.2"}}},
        {"C42", "Long inputs can use sparse patterns: a local window, strides, global plus local.", {{2, "7.1"}}},
        {"C43",
         "Kernel-based linear attention runs in O(n): Performer, the Linear Transformer, cosFormer.",
         {{2, "7.2"}}},
        {"C44", "These variants keep about 90% of the quality at 10 times the length or more.", {{2, "7.2"}}},
    };
    return r;
}

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

const std::vector<ClaimInfo>& claim_registry() { return registry(); }

const ClaimInfo* find_claim(std::string_view id) {
    std::string s(id);
    if (!s.empty()) s[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(s[0])));
    for (const ClaimInfo& c : registry())
        if (c.id == s) return &c;
    return nullptr;
}

std::string claim_where(const ClaimInfo& c, Lang lang) {
    std::string out;
    for (const auto& [article, section] : c.where)
        out += (out.empty() ? std::string() : std::string(translate(lang, "; "))) +
               format_in(lang, "article {}, §{}", article, section);
    return out;
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
    for (const ClaimInfo& c : registry()) {
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
