// The optimiser a training experiment asks for: AdamW, or SGD with momentum (PyTorch's
// rules, attn/train/optim.hpp), both set from one learning rate, weight decay and momentum.
// Shared by the experiments' trainer (exp_common.cpp) and the lab's (lab_training.hpp).
#pragma once

#include <vector>

#include "attn/train/optim.hpp"

namespace attn::exp {

struct ChosenOptimiser {
    AdamW adam;
    Sgd sgd;
    bool use_sgd = false;

    ChosenOptimiser(double lr, double weight_decay, double momentum, bool sgd_) : use_sgd(sgd_) {
        adam.lr = static_cast<float>(lr);
        adam.weight_decay = static_cast<float>(weight_decay);
        sgd.lr = static_cast<float>(lr);
        sgd.momentum = static_cast<float>(momentum);
        sgd.weight_decay = static_cast<float>(weight_decay);
    }
    void step(std::vector<Param>& params) {
        if (use_sgd) sgd.step(params);
        else adam.step(params);
    }
};

}  // namespace attn::exp
