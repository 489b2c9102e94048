// app/serve_exercise.hpp: the lab's /exercise page computes with this: the exercises of
// `attn exercise` (lib/check/exercise.hpp), their inputs for a seed, and the grading of an
// uploaded answer, the same result `attn exercise N --seed S --check ANSWER --json` gives.
#pragma once

#include <cstddef>

#include <nlohmann/json.hpp>

namespace attn::cli {

// An uploaded answer (.npy or .npz) is at most this many bytes once decoded from base64: its
// base64 (4/3 as long) and the other fields fit in the lab's one body limit (kLabMaxBodyBytes),
// and every exercise's answer, even float64 in an .npz, is well under 2 KiB.
inline constexpr size_t kLabMaxAnswerBytes = 8 * 1024;

// Request: exercise (a number 1-12 or a name; default 1), seed (default 0). Answer
// "attn-lab-exercise": exercises [{number, name, title, lesson, answer}] (all of them), exercise
// (the chosen one), seed, answer_shape, task (the task text of `attn exercise N`), inputs (the
// bytes of its inputs.npz, base64), command (`attn exercise N --seed S`), check_command. LabError
// naming the field.
nlohmann::json lab_exercise(const nlohmann::json& request);

// Request: exercise, seed (as above) and answer (the bytes of a .npy or .npz file, base64; at
// most kLabMaxAnswerBytes decoded). Answer "attn-lab-exercise-check": exercise, seed, check (the
// attn-check document: stages, first_divergence, diagnosis), pass, hint, command (the
// `attn exercise ... --check answer.npy --json` that gives the same check). A file that is not
// .npy or .npz, too big, of the wrong shape or dtype: LabError (400) on field "answer".
nlohmann::json lab_exercise_check(const nlohmann::json& request);

}  // namespace attn::cli
