// attn/core/init.hpp: weight initialisers, with PyTorch's formulas.
//
// W is stored [out, in] (nn.Linear), so fan_in = in, fan_out = out.
//   torch           W ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)) (kaiming_uniform with a=sqrt(5)), b likewise
//   xavier_uniform  W ~ U(-a, a), a = sqrt(6 / (fan_in + fan_out)), b = 0
//   xavier_normal   W ~ N(0, 2 / (fan_in + fan_out)), b = 0
//   kaiming_uniform W ~ U(-a, a), a = sqrt(6 / fan_in) (gain sqrt(2), ReLU), b = 0
//   kaiming_normal  W ~ N(0, 2 / fan_in), b = 0
//   normal:STD      W ~ N(0, STD^2), b = 0
//   zeros           W = 0, b = 0 (every head identical: C9's warning)
#pragma once

#include <string>

#include "attn/core/rng.hpp"
#include "attn/core/tensor.hpp"

namespace attn {

enum class InitKind { Torch, XavierUniform, XavierNormal, KaimingUniform, KaimingNormal, Normal, Zeros };

struct InitSpec {
    InitKind kind = InitKind::Torch;
    float std = 0.02f;  // only for Normal
};

// "torch", "xavier_uniform", ..., "normal:0.02", "zeros".
std::string init_name(const InitSpec& spec);

// Fills W [out, in] and, if non-empty, b [out] in place.
void init_linear(Tensor& W, Tensor& b, const InitSpec& spec, Rng& rng);

}  // namespace attn
