// attn/check/exercise.hpp: the exercises of `attn exercise`. Each one draws its inputs
// from a seed, says what to compute (a task text with a numpy skeleton), knows its
// reference answer, and grades an answer with the comparison of `attn check` and its
// catalogue of mistakes (check.hpp), plus a few mistakes of its own where the step is
// not part of the forward pipeline (the softmax gradient, a KV-cache step, RoPE).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "attn/check/check.hpp"
#include "attn/io/dump.hpp"

namespace attn::check {

struct ExerciseInfo {
    int number = 0;
    std::string name;    // "scores", "softmax", ...
    std::string title;   // one line
    int lesson = 0;      // the lesson of `attn tour` that teaches the step
    std::string answer;  // the name of the answer tensor ("scores_scaled", "weights", "dS", ...)
};
const std::vector<ExerciseInfo>& exercises();
// By number ("3") or name ("causal"). InputError otherwise (neutral words).
const ExerciseInfo& find_exercise(const std::string& number_or_name);

// The inputs of an exercise for `seed`: the tensors (float32) and the settings in the
// config ("exercise", "number", "seed", "answer", "answer_shape", and heads, kv_heads,
// mask, scale where they apply), ready to be written as an npz dump.
Dump exercise_inputs(const ExerciseInfo& e, uint64_t seed);
// The task text: what to compute, the shapes, the conventions, a numpy skeleton.
std::string exercise_task(const ExerciseInfo& e, const Dump& inputs, const std::string& inputs_file,
                          const std::string& answer_file);
// The answer's shape, as the task states it (no leading 1s).
Shape answer_shape(const ExerciseInfo& e, const Dump& inputs);

// The reference answer, and the answer with the exercise's typical mistake (for tests
// and for showing what a wrong answer is graded as); wrong_answer_id names that mistake.
Tensor reference_answer(const ExerciseInfo& e, const Dump& inputs);
Tensor wrong_answer(const ExerciseInfo& e, const Dump& inputs);
std::string wrong_answer_id(const ExerciseInfo& e);

// Grades `answer` (its shape may drop or add leading 1s; any other shape is an
// InputError naming `what`): the report of one stage, the answer, with the diagnosis.
CheckReport grade_exercise(const ExerciseInfo& e, const Dump& inputs, const Tensor& answer, bool f64,
                           const std::string& what);
// A hint for a failed answer: the fix of what was diagnosed, or where to look.
std::string exercise_hint(const ExerciseInfo& e, const CheckReport& r);
// The mistakes only exercises know (ids and texts), beside catalogue().
const std::vector<Mistake>& exercise_mistakes();

}  // namespace attn::check
