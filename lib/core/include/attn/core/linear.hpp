// attn/core/linear.hpp: nn.Linear. y = x W^T + b, W stored [out, in] (C7).
#pragma once

#include <cstdint>

#include "attn/core/init.hpp"
#include "attn/core/tensor.hpp"

namespace attn {

// out [N, out_f] = x [N, in_f] . W[out_f, in_f]^T + b[out_f] (b may be null).
void linear_forward(float* out, const float* x, const float* W, const float* b,
                    int64_t N, int64_t in_f, int64_t out_f);

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
};

}  // namespace attn
