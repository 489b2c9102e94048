// Element-by-element comparison of a tensor with a reference, shared by the
// parity suites (test_parity.cpp for every backend, test_cuda.cpp for the GPU
// kernels' extra paths): |got - ref| <= abs + rel·|ref| for every finite pair,
// normalised MSE sum (got - ref)² / sum ref² <= nmse, and non-finite entries at
// the same positions with the same value (both NaN, or the same infinity).
#pragma once

#include <algorithm>
#include <cmath>
#include <string>

#include <fmt/format.h>

#include "attn/core/tensor.hpp"

namespace attn::test {

struct Tolerance {
    double abs, rel, nmse;
};

// "" when got matches ref within t, else what went wrong (the count of elements
// outside the bound and the worst of them, or the first non-finite mismatch).
inline std::string compare(const Tensor& got, const Tensor& ref, const Tolerance& t) {
    if (got.shape != ref.shape) return "shape " + shape_str(got.shape) + " vs " + shape_str(ref.shape);
    double se = 0, sr = 0, worst = 0;
    int64_t worst_at = -1, bad = 0;
    for (int64_t n = 0; n < ref.numel(); ++n) {
        const double g = got.data[static_cast<size_t>(n)], r = ref.data[static_cast<size_t>(n)];
        if (!std::isfinite(r) || !std::isfinite(g)) {
            const bool same = (std::isnan(r) && std::isnan(g)) || g == r;
            if (!same) return fmt::format("non-finite mismatch at flat index {}: got {}, reference {}", n, g, r);
            continue;
        }
        const double d = std::fabs(g - r), bound = t.abs + t.rel * std::fabs(r);
        se += d * d;
        sr += r * r;
        if (d > bound) {
            ++bad;
            if (d - bound > worst) worst = d - bound, worst_at = n;
        }
    }
    if (bad > 0)
        return fmt::format("{} of {} elements outside |diff| <= {:g} + {:g}·|ref|; worst at flat index {}: got {}, "
                           "reference {}",
                           bad, ref.numel(), t.abs, t.rel, worst_at, got.data[static_cast<size_t>(worst_at)],
                           ref.data[static_cast<size_t>(worst_at)]);
    const double nmse = sr > 0 ? se / sr : se;
    if (nmse > t.nmse) return fmt::format("normalised MSE {:.3g} > {:.1g}", nmse, t.nmse);
    return "";
}

}  // namespace attn::test
