// attn/nn/elman.hpp: a small recurrent network (Elman, tanh) with its
// backward pass through time, the baseline of experiment "distance" (C1).
//
//   h_0 = 0;  h_t = tanh(E[x_t] + W h_{t-1} + b)      E (V, H) as nn.Embedding feeding
//                                                     nn.RNN's W_ih (one-hot input), W (H, H)
//   logits_t = W_y h_t + b_y                           W_y (V, H) as nn.Linear
//   loss = cross-entropy over the scored positions (target -1 not scored), mean
// BPTT: dh_t = W_yᵀ dlogits_t + Wᵀ da_{t+1};  da_t = dh_t (1 - h_t²);
//   dW += da_tᵀ h_{t-1}, db += Σ da_t, dE[x_t] += da_t, dW_y += dlogits_tᵀ h_t, db_y += Σ dlogits_t.
// Parameters in order: embed (V, H), w_hh (H, H), b_h (H), head (V, H), b_y (V).
// Init as PyTorch's nn.RNN: every tensor U(-1/sqrt(H), 1/sqrt(H)).
#pragma once

#include <cstdint>
#include <vector>

#include "attn/core/tensor.hpp"
#include "attn/nn/trainable_stack.hpp"

namespace attn {

// One pass over tokens/targets (B, T); grads (5 pointers, overwritten) may be empty.
// Returns the mean loss; correct/counted as LabStats.
struct RnnStats {
    double loss = 0;
    int64_t correct = 0, counted = 0;
};
// S = float in the library; S = double in attn_nn_f64 (lib/nn/f64), which only the tests link.
template <class S>
RnnStats elman_pass(int64_t V, int64_t H, const std::vector<const S*>& params, const std::vector<S*>& grads,
                    const int32_t* tokens, const int32_t* targets, int64_t B, int64_t T);

class ElmanRnn {
public:
    ElmanRnn(int64_t vocab, int64_t hidden);
    void init(uint64_t seed);
    RnnStats step(const int32_t* tok, const int32_t* tgt, int64_t B, int64_t T);      // gradients written
    RnnStats evaluate(const int32_t* tok, const int32_t* tgt, int64_t B, int64_t T);  // no gradients
    std::vector<Param> params();
    std::vector<Tensor>& values() { return w_; }
    int64_t vocab() const { return V_; }
    int64_t hidden() const { return H_; }

private:
    int64_t V_, H_;
    std::vector<Tensor> w_, g_;
};

}  // namespace attn
