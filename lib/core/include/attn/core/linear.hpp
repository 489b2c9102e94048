// attn/core/linear.hpp: nn.Linear. y = x W^T + b, W stored [out, in] (C7).
#pragma once

#include <cstdint>

#include "attn/core/init.hpp"
#include "attn/core/tensor.hpp"

namespace attn {

// out [N, out_f] = x [N, in_f] . W[out_f, in_f]^T + b[out_f] (b may be null).
// T is float or double (the double instantiation serves the gradient checks).
template <class T>
void linear_forward(T* out, const T* x, const T* W, const T* b, int64_t N, int64_t in_f, int64_t out_f);
inline void linear_forward(float* out, const float* x, const float* W, const float* b, int64_t N, int64_t in_f,
                           int64_t out_f) {
    linear_forward<float>(out, x, W, b, N, in_f, out_f);
}

// The backward of linear_forward for an upstream gradient dy [N, out_f]:
//   dx [N, in_f]     += dy . W          (W [out_f, in_f])
//   dW [out_f, in_f] += dy^T . x
//   db [out_f]       += sum over the N rows of dy
// It ACCUMULATES (+=) into dx, dW and db, as llm.c's layers do: a weight used
// twice (or an input feeding three projections, self-attention's x) sums its
// gradients without a temporary. Zero them first for a fresh gradient. Any of
// dx, dW, db may be null: that gradient is not computed.
template <class T>
void linear_backward(T* dx, T* dW, T* db, const T* dy, const T* x, const T* W, int64_t N, int64_t in_f,
                     int64_t out_f);
inline void linear_backward(float* dx, float* dW, float* db, const float* dy, const float* x, const float* W,
                            int64_t N, int64_t in_f, int64_t out_f) {
    linear_backward<float>(dx, dW, db, dy, x, W, N, in_f, out_f);
}

struct Linear {
    Tensor W;  // [out, in]
    Tensor b;  // [out], empty when bias is off (C8)

    Linear() = default;
    Linear(int64_t in_features, int64_t out_features, bool bias = true);
    int64_t in_features() const { return W.dim(1); }
    int64_t out_features() const { return W.dim(0); }
    bool has_bias() const { return !b.empty(); }
    void init(const InitSpec& spec, Rng& rng) { init_linear(W, b, spec, rng); }
    int64_t num_params() const { return W.numel() + b.numel(); }
    // x [..., in] -> [..., out]; throws ShapeError if the last dim is not `in`.
    Tensor forward(const Tensor& x) const;
    // Gradients for dy (..., out) at input x (..., in). Fresh tensors (not accumulated):
    // dx like x, dW like W, db like b (empty without bias). Throws ShapeError on shapes
    // that do not fit.
    struct Grads {
        Tensor dx, dW, db;
    };
    Grads backward(const Tensor& x, const Tensor& dy) const;
};

}  // namespace attn
