// attn/cpu/lanes.hpp: two small pieces lib/nn's fast ops and lib/cpu's training attention kernel
// share (internal to attn): sums by lanes, and per-thread scratch buffers.
//
// Sums by lanes: kLanes independent partial sums (lane l takes elements l, l + kLanes, ...),
// combined pairwise in a fixed order, the row kernels' order (attn/cpu/rows.hpp): the compiler
// keeps the lanes in one vector register instead of a chain of n dependent adds, and the result
// depends only on n.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace attn::cpu {

inline constexpr int64_t kLanes = 16;

// p[0, kLanes) added pairwise into p[0], which is returned.
template <class S>
S reduce_lanes(S* p) {
    for (int64_t w = kLanes / 2; w > 0; w /= 2)
        for (int64_t l = 0; l < w; ++l) p[l] += p[l + w];
    return p[0];
}
// x[0] + ... + x[n - 1] by lanes.
template <class S>
S sum_lanes(const S* x, int64_t n) {
    S p[kLanes] = {};
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes)
        for (int64_t l = 0; l < kLanes; ++l) p[l] += x[i + l];
    for (int64_t l = 0; i + l < n; ++l) p[l] += x[i + l];
    return reduce_lanes(p);
}
// x . y over n elements by lanes.
template <class S>
S dot_lanes(const S* x, const S* y, int64_t n) {
    S p[kLanes] = {};
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes)
        for (int64_t l = 0; l < kLanes; ++l) p[l] += x[i + l] * y[i + l];
    for (int64_t l = 0; i + l < n; ++l) p[l] += x[i + l] * y[i + l];
    return reduce_lanes(p);
}

// At least n elements of per-thread scratch in slot 0, 1 or 2. The buffers live as long as the
// thread (the pool's workers persist), so a training step allocates nothing once the first step
// has sized them; one set per thread serves the fast ops and the training attention alike (an op
// uses them only while it runs, and a thread runs one op at a time).
template <class S>
S* thread_scratch(size_t n, int slot) {
    thread_local std::vector<S> buf[3];
    auto& b = buf[slot];
    if (b.size() < n) b.resize(n);
    return b.data();
}

}  // namespace attn::cpu
