// tests/transformer_test_util.hpp: what the tests of the Transformer (attn/nn/trainable_stack.hpp)
// share: its parameters copied to double, params() order, for loss_and_grads_f64.
#pragma once

#include <vector>

#include "attn/nn/trainable_stack.hpp"

namespace attn::test {

inline std::vector<std::vector<double>> params_f64(TrainableStack& m) {
    std::vector<std::vector<double>> out;
    for (const Param& p : m.params()) out.emplace_back(p.value->data.begin(), p.value->data.end());
    return out;
}

}  // namespace attn::test
