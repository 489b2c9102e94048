// The tour runner (lessons/tour.hpp): which lessons a tour reads, the totals it adds
// up from the lessons' own results, the pause and per-lesson hook between them, and the
// attn-tour record.
#include <doctest/doctest.h>

#include <sstream>
#include <string>
#include <vector>

#include "tour.hpp"

using namespace attn::lessons;

TEST_CASE("tour runner: from..to and the parts choose the lessons, in order") {
    const std::vector<Lesson> all = all_lessons();
    REQUIRE(all.size() >= 3);
    const int last = all.back().number;
    CHECK(tour_lessons(1, last).size() == all.size());
    const std::vector<Lesson> two = tour_lessons(2, 3);
    REQUIRE(two.size() == 2);
    CHECK(two[0].number == 2);
    CHECK(two[1].number == 3);
    CHECK(tour_lessons(3, 2).empty());
    const std::vector<Lesson> core = tour_lessons(1, last, true, false), advanced = tour_lessons(1, last, false, true);
    CHECK(core.size() + advanced.size() == all.size());
    for (const Lesson& l : core) CHECK(l.part == Part::core);
    for (const Lesson& l : advanced) CHECK(l.part == Part::advanced);
}

TEST_CASE("tour runner: totals are the lessons' own, pauses fall between lessons, and the record carries them") {
    RunOptions opt;
    opt.json = true;  // records only, no text
    int pauses = 0;
    opt.pause = [&pauses] { ++pauses; };
    std::vector<int> seen;
    std::ostringstream out;
    const std::vector<Lesson> chosen = tour_lessons(1, 2);
    const TourResult t = run_tour(chosen, opt, out, [&](const Lesson& l, int index, RunOptions&) {
        CHECK(index == static_cast<int>(seen.size()) + 1);
        seen.push_back(l.number);
    });
    CHECK(seen == std::vector<int>{1, 2});
    CHECK(t.totals.ran == 2);
    REQUIRE(t.records.size() == 2);
    CHECK_FALSE(t.whole);
    CHECK_FALSE(t.scores.empty());
    // each lesson run alone gives the same counts: the runner adds, it does not judge
    TourTotals alone;
    int lesson_pauses = 0;  // the pauses the lessons make between their own sections
    for (const Lesson& l : chosen) {
        RunOptions o;
        o.json = true;
        o.pause = [&lesson_pauses] { ++lesson_pauses; };
        alone.add(run_lesson(l, o, out));
    }
    CHECK(t.totals.passed == alone.passed);
    CHECK(t.totals.measured == alone.measured);
    CHECK(t.totals.identities == alone.identities);
    CHECK(t.totals.passed == t.totals.measured + t.totals.identities);
    CHECK(t.totals.failed == 0);
    CHECK(pauses == lesson_pauses + 1);  // and one between the two lessons

    const nlohmann::json rec = tour_record(t, 7, Lang::en);
    CHECK(rec["format"] == "attn-tour");
    CHECK(rec["version"] == 1);
    CHECK(rec["seed"] == 7);
    CHECK(rec["lessons"].size() == 2);
    CHECK(rec["passed"] == t.totals.passed);
    CHECK(rec["scorecard"].size() == t.scores.size());
}
