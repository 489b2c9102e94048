// The Elman RNN of experiment "distance" (attn/nn/elman.hpp): its pass (elman_impl.hpp) in
// float32, its weights and their initialisation.
#include "attn/nn/elman.hpp"

#include <cmath>

#include "attn/core/errors.hpp"
#include "attn/core/rng.hpp"
#include "elman_impl.hpp"

namespace attn {

template RnnStats elman_pass<float>(int64_t, int64_t, const std::vector<const float*>&, const std::vector<float*>&,
                                    const int32_t*, const int32_t*, int64_t, int64_t);

ElmanRnn::ElmanRnn(int64_t vocab, int64_t hidden) : V_(vocab), H_(hidden) {
    if (vocab < 2 || hidden < 1) throw InputError("elman: vocab >= 2 and hidden >= 1");
    for (const Shape& s : std::vector<Shape>{{V_, H_}, {H_, H_}, {H_}, {V_, H_}, {V_}})
        w_.emplace_back(s), g_.emplace_back(s);
}

void ElmanRnn::init(uint64_t seed) {
    const float bound = 1.0f / std::sqrt(static_cast<float>(H_));
    for (size_t t = 0; t < w_.size(); ++t) {
        Rng rng(seed, 0xe1a0 + t);
        for (float& x : w_[t].data) x = rng.uniform(-bound, bound);
    }
}

RnnStats ElmanRnn::step(const int32_t* tok, const int32_t* tgt, int64_t B, int64_t T) {
    std::vector<const float*> p;
    std::vector<float*> g;
    for (size_t t = 0; t < w_.size(); ++t) p.push_back(w_[t].data.data()), g.push_back(g_[t].data.data());
    return elman_pass<float>(V_, H_, p, g, tok, tgt, B, T);
}

RnnStats ElmanRnn::evaluate(const int32_t* tok, const int32_t* tgt, int64_t B, int64_t T) {
    std::vector<const float*> p;
    for (auto& t : w_) p.push_back(t.data.data());
    return elman_pass<float>(V_, H_, p, {}, tok, tgt, B, T);
}

std::vector<Param> ElmanRnn::params() {
    static const char* names[] = {"embed.weight", "rnn.weight_hh", "rnn.bias_hh", "head.weight", "head.bias"};
    std::vector<Param> p;
    for (size_t t = 0; t < w_.size(); ++t) p.push_back(Param{names[t], &w_[t], &g_[t], w_[t].shape.size() == 2});
    return p;
}

}  // namespace attn
