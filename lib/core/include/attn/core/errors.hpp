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
    // what() is a C string, so a NUL inside the message (a file's bytes quoted in it) would
    // end it there: each NUL is written \x00 instead.
    explicit InputError(const std::string& what) : std::runtime_error(without_nul(what)) {}
    explicit InputError(const char* what) : std::runtime_error(what) {}

private:
    static std::string without_nul(const std::string& s) {
        if (s.find('\0') == std::string::npos) return s;
        std::string out;
        for (const char c : s) out += c == '\0' ? std::string("\\x00") : std::string(1, c);
        return out;
    }
};

// Shapes that do not fit together (the C35 / C22 family of bugs).
struct ShapeError : InputError {
    using InputError::InputError;
};

}  // namespace attn
