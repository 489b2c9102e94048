// Shared inside lib/check: the sizes of a problem.
#pragma once

#include <cstdint>

#include "attn/check/check.hpp"

namespace attn::check {

struct Dims {
    int64_t B = 1, Tq = 0, Tk = 0, D = 0, H = 1, Hkv = 1, Dk = 0, Dv = 0, Dout = 0;
    bool has_out = false;
};
// The sizes of a problem whose inputs have been validated (learner_from_tensors does).
Dims dims_of(const Problem& p);

}  // namespace attn::check
