// lib/src/flash_generic.cpp: the float32 flash kernel in plain C++, for any CPU.
// Its "vector" is 8 floats in a struct; the loops over them are left to the
// compiler's auto-vectoriser (SSE2 on a portable x86-64 build).
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "flash_kernel.hpp"

namespace attn::flash_detail {
namespace {

struct Generic {
    struct V {
        float x[8];
    };
    static constexpr int W = 8;
    static V zero() { return V{}; }
    static V load(const float* p) {
        V r;
        for (int i = 0; i < W; ++i) r.x[i] = p[i];
        return r;
    }
    static void store(float* p, const V& a) {
        for (int i = 0; i < W; ++i) p[i] = a.x[i];
    }
    static V set1(float s) {
        V r;
        for (int i = 0; i < W; ++i) r.x[i] = s;
        return r;
    }
    static V fmadd(const V& a, const V& b, const V& c) {
        V r;
        for (int i = 0; i < W; ++i) r.x[i] = a.x[i] * b.x[i] + c.x[i];
        return r;
    }
    static V mul(const V& a, const V& b) {
        V r;
        for (int i = 0; i < W; ++i) r.x[i] = a.x[i] * b.x[i];
        return r;
    }
    static V add(const V& a, const V& b) {
        V r;
        for (int i = 0; i < W; ++i) r.x[i] = a.x[i] + b.x[i];
        return r;
    }
    static V sub(const V& a, const V& b) {
        V r;
        for (int i = 0; i < W; ++i) r.x[i] = a.x[i] - b.x[i];
        return r;
    }
    static V max(const V& a, const V& b) {
        V r;
        for (int i = 0; i < W; ++i) r.x[i] = a.x[i] > b.x[i] ? a.x[i] : b.x[i];
        return r;
    }
    static V finite_or_zero(const V& a) {
        V r;
        for (int i = 0; i < W; ++i) r.x[i] = a.x[i] == kNegInf ? 0.0f : a.x[i];
        return r;
    }
    static V exp2(const V& a) {
        V r;
        for (int i = 0; i < W; ++i) r.x[i] = std::exp2(a.x[i]);
        return r;
    }
};

// Block sizes: 32 queries (4 x 8), tiles of 2 rows: 64 accumulator floats, which
// SSE2's 16 registers hold; BK = 64 keys as in the vector kernels.
using KGen = FlashF32<Generic, 4, 2, 2, 64>;
const Kernel kGeneric{"generic", KGen::BQ, &KGen::workspace_floats, &KGen::run_item};

}  // namespace

const Kernel* generic_kernel() { return &kGeneric; }

}  // namespace attn::flash_detail
