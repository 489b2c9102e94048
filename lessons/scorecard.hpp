// lessons/scorecard.hpp: the verdict the tour reaches on each of the 44 claims of the source
// (claims.hpp): `attn claims` and the tour's closing scorecard.
//
// A verdict is never typed in: it is read from the lessons' own records (the
// --json record every lesson fills as it runs: its checks, qualified and
// not-supported verdicts, inconclusive ones, claims not measured, flags on the
// source), by one rule (verdict_of below, written out in docs/claims.md,
// "The verdict rule"); the first line that applies decides:
//
//   an error of the source flagged              -> error of the source
//   a verdict "not supported"                   -> not supported
//   a check that failed (✗)                     -> inconclusive (never supported)
//   a verdict "inconclusive" (seeds disagree,
//     or a difference below the resolution)     -> inconclusive
//   a verdict "qualified"                       -> qualified
//   the source's words flagged imprecise        -> imprecise
//   a check that held (✓ or ≡)                  -> supported
//   else                                        -> not measured
//
// A slip (the source's code or an aside contradicts a claim that stands) is printed
// with the claim and decides nothing. So the tour and `attn claims` agree by
// construction: both score the same records.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "claims.hpp"
#include "lesson.hpp"

namespace attn::lessons {

enum class ClaimVerdict { supported, qualified, not_supported, inconclusive, not_measured, source_error, imprecise };
// "supported", "qualified", "not supported", "inconclusive", "not measured", "error of the source",
// "imprecise"
const char* claim_verdict_name(ClaimVerdict v);
// Every verdict, in the order the scorecard counts them.
const std::vector<ClaimVerdict>& all_claim_verdicts();

// One piece of evidence a lesson recorded on a claim.
struct ClaimEvidence {
    std::string kind;     // "measured", "identity", "failed", "qualified", "not supported",
                          // "inconclusive", "not measured", "error of the source",
                          // "source imprecise", "source slip"
    std::string text;     // as the lesson printed it (in the run's language)
    int lesson = 0;       // the lesson's number
    std::string command;  // what shows it: "attn lesson 5" or "attn experiment scale"
    std::string key{};    // "L5/not-supported/1": lesson, kind, and its rank among the lesson's
                          // items of that kind on this claim (stable across seeds and languages)
};

struct ClaimScore {
    const ClaimInfo* claim = nullptr;
    ClaimVerdict verdict = ClaimVerdict::not_measured;
    std::string basis;    // for supported: "measured" or "identity"; else empty
    std::string reason;   // the deciding evidence's text (or why nothing was measured)
    std::string command;  // the deciding evidence's command
    std::vector<int> lessons;  // the lessons that recorded evidence on it
    std::vector<ClaimEvidence> evidence;
    std::vector<std::string> decided_by{};  // the keys of the evidence at the deciding rank
};

// The verdict the evidence supports, by the rule above; `deciding` (may be null)
// receives the index of the deciding item (or -1).
ClaimVerdict verdict_of(const std::vector<ClaimEvidence>& evidence, int* deciding = nullptr);
// The keys of every piece of evidence of the deciding kind (the one verdict_of picked and
// any other of the same rank): what `attn claims --json` lists as "decided_by".
std::vector<std::string> deciding_keys(const ClaimScore& s);

// Scores all 44 claims from lesson records (each a run_lesson(...).record).
// partial: only claims some record cites are listed (a tour run with --from/--to).
std::vector<ClaimScore> score_claims(const std::vector<nlohmann::json>& records, Lang lang, bool partial = false);

// Runs, without printing, the lessons that cite `only` (every lesson when empty)
// with `opt` (its json flag is forced on) and scores the claims. progress, when
// set, is called before each lesson with (index, count, lesson).
std::vector<ClaimScore> compute_scorecard(RunOptions opt, const std::vector<std::string>& only = {},
                                          const std::function<void(int, int, const Lesson&)>& progress = {});

std::map<ClaimVerdict, int> verdict_counts(const std::vector<ClaimScore>& scores);
// The record of one claim (id, claim, verdict, basis, reason, command, source, lessons, evidence).
nlohmann::json claim_score_json(const ClaimScore& s, Lang lang);

// The short scorecard: one line of counts, then one line per verdict listing its
// ids ("supported (27): C2, C3, ..."), wrapped at `width`.
std::string scorecard_short(const std::vector<ClaimScore>& scores, Lang lang, int width);

}  // namespace attn::lessons
