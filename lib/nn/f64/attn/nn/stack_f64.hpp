// attn/nn/stack_f64.hpp: the trained stack's loss and gradients in double precision, for the
// tests' finite-difference checks. Test support: in attn_nn_f64 (lib/nn/f64), which the tests link
// and the library does not ship.
#pragma once

#include <cstdint>
#include <vector>

#include "attn/nn/trainable_stack.hpp"

namespace attn {

// The same forward + backward in double precision through the reference ops, for
// finite-difference checks: params are the model's parameters in params() order (as
// double), the return value is the mean loss, and grads (if not null) gets d loss / d param
// in the same layout. train = true applies dropout with step_seed, as forward_backward does.
double loss_and_grads_f64(const ModelConfig& cfg, const std::vector<std::vector<double>>& params,
                          const int32_t* tokens, const int32_t* targets, int64_t B, int64_t T,
                          std::vector<std::vector<double>>* grads, bool train = false, uint64_t step_seed = 0);

}  // namespace attn
