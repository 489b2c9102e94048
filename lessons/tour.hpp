// lessons/tour.hpp: the guided tour as a runner: which lessons a tour reads, running
// them in order with their checks added up, and the attn-tour record (every lesson's
// record, the totals and the closing scorecard). The CLI (`attn tour`) maps its options
// to these and prints; nothing here parses an option or writes a file.
#pragma once

#include <cstdint>
#include <functional>
#include <ostream>
#include <vector>

#include <nlohmann/json.hpp>

#include "lesson.hpp"
#include "scorecard.hpp"

namespace attn::lessons {

// What the tour's lessons add up to.
struct TourTotals {
    int ran = 0, passed = 0, failed = 0, not_supported = 0;
    int measured = 0, identities = 0, qualified = 0, unmeasured = 0, source_errors = 0, inconclusive = 0;
    int predictions = 0, answered = 0, close = 0, near = 0;  // questions asked, guesses typed, close / near
    void add(const LessonResult& r);
};

// The tour's closing line on the predictions: how many were asked, answered and how close
// the guesses came (judge_guess); empty when the lessons asked none.
std::string predictions_summary(const TourTotals& t, Lang lang);

// The lessons numbered from..to (inclusive), in order; with core (or advanced) only
// those of that part of the tour. May be empty.
std::vector<Lesson> tour_lessons(int from, int to, bool core = false, bool advanced = false);

struct TourResult {
    TourTotals totals;
    std::vector<nlohmann::json> records;  // each lesson's --json record, in order
    // all 44 claims for the whole tour; for a part of it, the claims its lessons test
    std::vector<ClaimScore> scores;
    bool whole = false;  // the tour read every lesson
};

// Runs `lessons` in order with `opt`, text to `out`: opt.pause (when set) between
// lessons, and before_each(lesson, index from 1, opt) first, where the caller may set
// what changes per lesson (opt.progress). An exception from pause or a lesson ends the
// tour there and reaches the caller.
TourResult run_tour(const std::vector<Lesson>& lessons, RunOptions opt, std::ostream& out,
                    const std::function<void(const Lesson&, int, RunOptions&)>& before_each = {});

// The attn-tour record (format "attn-tour", version 1): seed, every lesson's record,
// the totals, the predictions (asked, answered, close, near) and the scorecard.
nlohmann::json tour_record(const TourResult& t, uint64_t seed, Lang lang);

}  // namespace attn::lessons
