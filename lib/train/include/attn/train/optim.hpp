// attn/train/optim.hpp: optimisers with PyTorch's update rules, and gradient clipping.
//
// AdamW (torch.optim.AdamW, amsgrad=False), for each parameter p with gradient g, step t >= 1:
//   p = p - lr * wd * p                     (only for Param::decay; decoupled weight decay)
//   m = b1 m + (1 - b1) g;   v = b2 v + (1 - b2) g^2
//   p = p - lr * (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps)
// SGD (torch.optim.SGD, dampening 0, nesterov False):
//   g = g + wd * p                          (only for Param::decay)
//   buf = g at the first step, then momentum * buf + g;   p = p - lr * buf
// State is kept per parameter index, so step() must always get the same parameter list.
// Elementwise, in a fixed order: the same numbers at any thread count.
#pragma once

#include <cstdint>
#include <vector>

#include "attn/nn/trainable_stack.hpp"

namespace attn {

struct AdamW {
    float lr = 1e-3f, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f, weight_decay = 0.01f;
    void step(std::vector<Param>& params);

private:
    int64_t t_ = 0;
    std::vector<std::vector<float>> m_, v_;
};

struct Sgd {
    float lr = 1e-2f, momentum = 0.9f, weight_decay = 0.0f;
    void step(std::vector<Param>& params);

private:
    std::vector<std::vector<float>> buf_;
};

// torch.nn.utils.clip_grad_norm_: total = sqrt(sum of every gradient element squared)
// (summed in double); if total > max_norm, every gradient is multiplied by
// max_norm / (total + 1e-6). Returns the norm before clipping. max_norm <= 0: no clipping.
double clip_grad_norm(std::vector<Param>& params, double max_norm);

}  // namespace attn
