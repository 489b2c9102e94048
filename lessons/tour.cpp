// The guided tour as a runner (tour.hpp).
#include "tour.hpp"

namespace attn::lessons {

void TourTotals::add(const LessonResult& r) {
    ++ran;
    passed += r.passed;
    failed += r.failed;
    not_supported += r.not_supported;
    measured += r.measured;
    identities += r.identities;
    qualified += r.qualified;
    unmeasured += r.unmeasured;
    source_errors += r.source_errors;
    inconclusive += r.inconclusive;
    predictions += r.predictions;
    answered += r.answered;
    close += r.close;
    near += r.near;
}

std::string predictions_summary(const TourTotals& t, Lang lang) {
    if (t.predictions == 0) return "";
    if (t.answered == 0)
        return format_in(lang, "Predictions: {} asked, none answered (the tour waits for a guess only on a terminal, "
                               "without --no-ask).", t.predictions);
    return format_in(lang,
                     "Predictions: {} asked, {} answered: {} close (within 10%, or the question's margin), {} the "
                     "right size (within a factor of 2), {} further off.",
                     t.predictions, t.answered, t.close, t.near, t.answered - t.close - t.near);
}

std::vector<Lesson> tour_lessons(int from, int to, bool core, bool advanced) {
    std::vector<Lesson> chosen;
    for (const auto& l : all_lessons())
        if (l.number >= from && l.number <= to && (!core || l.part == Part::core) &&
            (!advanced || l.part == Part::advanced))
            chosen.push_back(l);
    return chosen;
}

TourResult run_tour(const std::vector<Lesson>& lessons, RunOptions opt, std::ostream& out,
                    const std::function<void(const Lesson&, int, RunOptions&)>& before_each) {
    TourResult t;
    for (const auto& lesson : lessons) {
        if (t.totals.ran > 0 && opt.pause) opt.pause();
        if (before_each) before_each(lesson, t.totals.ran + 1, opt);
        const LessonResult r = run_lesson(lesson, opt, out);
        t.totals.add(r);
        t.records.push_back(r.record);
    }
    t.whole = lessons.size() == all_lessons().size();
    // the whole tour scores all 44 claims; a part of it, only the claims its lessons test
    t.scores = score_claims(t.records, opt.lang, !t.whole);
    return t;
}

nlohmann::json tour_record(const TourResult& t, uint64_t seed, Lang lang) {
    nlohmann::json card = nlohmann::json::array();
    for (const auto& s : t.scores) card.push_back(claim_score_json(s, lang));
    const TourTotals& n = t.totals;
    return {{"format", "attn-tour"},
            {"version", 1},
            {"seed", seed},
            {"lessons", t.records},
            {"passed", n.passed},
            {"failed", n.failed},
            {"not_supported", n.not_supported},
            {"measured", n.measured},
            {"identities", n.identities},
            {"qualified", n.qualified},
            {"unmeasured", n.unmeasured},
            {"source_errors", n.source_errors},
            {"inconclusive", n.inconclusive},
            {"predictions",
             {{"asked", n.predictions}, {"answered", n.answered}, {"close", n.close}, {"near", n.near}}},
            {"scorecard", card}};
}

}  // namespace attn::lessons
