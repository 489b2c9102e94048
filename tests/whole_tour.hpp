// The test cases that run every lesson share one process: the doctest suite "whole tour".
//
// Each lesson's evidence (the fixed-seed training runs behind its training verdicts,
// evidence_run in lessons/evidence.cpp) is computed once per process, and a lesson's run at
// one seed, language and mode is kept here (lesson_run), so running these test cases
// together costs about two tours of training instead of one per test case. They carry
// ATTN_WHOLE_TOUR: skipped in a plain `attn_tests` run and by ctest's per-case entries, run
// as the one ctest entry "whole tour" (tests/CMakeLists.txt), that is
//   attn_tests --no-skip --test-suite="whole tour"
#pragma once

#include <doctest/doctest.h>

#include <cstdint>
#include <map>
#include <sstream>
#include <string>
#include <tuple>

#include "lesson.hpp"

#define ATTN_WHOLE_TOUR doctest::test_suite("whole tour") * doctest::skip()

namespace attn::test {

struct LessonRun {
    lessons::LessonResult result;
    std::string text;  // what the lesson printed (empty in JSON mode)
};

// One lesson's run, kept for the process: the same lesson, seed, language and mode give the
// same output (the lessons are deterministic; tests/test_lessons.cpp checks the verdicts
// across seeds). Not for a test that watches a side effect of running (the missing
// translations of tests/test_i18n.cpp): it would see none on a kept run.
inline const LessonRun& lesson_run(const lessons::Lesson& l, uint64_t seed, lessons::Lang lang = lessons::Lang::en,
                                   bool json = false) {
    static std::map<std::tuple<std::string, uint64_t, int, bool>, LessonRun> kept;
    const auto key = std::make_tuple(l.slug, seed, static_cast<int>(lang), json);
    auto it = kept.find(key);
    if (it == kept.end()) {
        lessons::RunOptions opt;
        opt.seed = seed;
        opt.lang = lang;
        opt.json = json;
        std::ostringstream out;
        LessonRun run;
        run.result = lessons::run_lesson(l, opt, out);
        run.text = out.str();
        it = kept.emplace(key, std::move(run)).first;
    }
    return it->second;
}

}  // namespace attn::test
