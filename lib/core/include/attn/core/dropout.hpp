// attn/core/dropout.hpp: the one rule for a dropout probability, which the attention's options
// (attn/core/attention.hpp) and the trained model's config (attn/nn/model_config.hpp) both check.
#pragma once

namespace attn {

// p in [0, 1), and below 1 also as a float32 (0.99999999999 is 1 as a float, and 1/(1 - 1) is
// no scale). False for NaN.
bool dropout_in_range(double p);

}  // namespace attn
