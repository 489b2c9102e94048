// attn/core/numeric_error.hpp: the one error besides InputError the library throws on purpose.
#pragma once

#include <stdexcept>

namespace attn {

// A result that came out NaN or infinite from valid inputs (weights that overflow float32
// somewhere in the pass): never printed as a result; the CLI says so in one line, exit 1.
struct NumericError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

}  // namespace attn
