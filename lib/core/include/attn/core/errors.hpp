// attn/core/errors.hpp: the exceptions the library throws.
//
// InputError means "the caller asked for something invalid" (a bad size, a
// malformed file, shapes that do not agree). Its message names no command-line
// option: the CLI, which knows where the value came from, puts the option in
// front and prints one line with exit code 2. Anything else escaping the
// library is a bug.
#pragma once

#include <stdexcept>
#include <string>

namespace attn {

struct InputError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// Shapes that do not fit together (the C35 / C22 family of bugs).
struct ShapeError : InputError {
    using InputError::InputError;
};

}  // namespace attn
