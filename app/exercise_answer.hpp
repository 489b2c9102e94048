// app/exercise_answer.hpp: an exercise's answer from the bytes of a .npy or .npz file, read the
// same way by `attn exercise N --check ANSWER` and by the lab's exercise page (POST
// /api/exercise/check), so both grade the same tensor.
#pragma once

#include <string>
#include <string_view>

#include "attn/check/exercise.hpp"

namespace attn::cli {

// `bytes` of a .npy (np.save) or, with `npz`, an .npz (np.savez) holding an array named after
// the answer (or one array alone). Float32 or float64 (`f64` says which); anything else is an
// InputError naming `what` (the file).
Tensor exercise_answer_from_bytes(const check::ExerciseInfo& e, std::string_view bytes, const std::string& what,
                                  bool npz, bool& f64);

}  // namespace attn::cli
