// The stack's training path (attn/nn/trainable_stack.hpp) in float32: TrainableStack's passes
// through the engine of stack_engine.hpp, and the activations they save.
#include "attn/nn/trainable_stack.hpp"

#include <algorithm>
#include <memory>
#include <vector>

#include "stack_engine.hpp"

namespace attn {

namespace stack_train {
struct SavedActs {
    Acts<float> a;
};
void SavedActsDelete::operator()(SavedActs* a) const noexcept { delete a; }
}  // namespace stack_train

namespace {
// The model's saved activations, made by its first pass.
Acts<float>& acts_of(std::unique_ptr<SavedActs, SavedActsDelete>& acts) {
    if (!acts) acts.reset(new SavedActs);
    return acts->a;
}
}  // namespace

StepStats TrainableStack::forward_backward(const int32_t* tokens, const int32_t* targets, int64_t B, int64_t T,
                                            uint64_t step_seed, int threads) {
    check_batch(cfg_, tokens, targets, B, T);
    Ptrs<float> p;
    for (size_t i = 0; i < st_->values.size(); ++i) {
        p.P.push_back(st_->values[i]->ptr());
        p.G.push_back(st_->grads[i].ptr());
        p.sizes.push_back(st_->values[i]->numel());
    }
    const Ops<float> op{!reference_, reference_ ? 1 : threads};
    return run_model<float>(cfg_, p.P, &p.G, p.sizes, acts_of(st_->acts), tokens, targets, B, T, true, step_seed, op);
}

namespace {
void keep_attention(const ModelConfig& c, const Acts<float>& a, std::vector<Tensor>& out, int64_t B, int64_t T) {
    out.clear();
    for (const auto& L : a.L) {
        if (L.att.empty()) {  // linear attention: no weights
            out.emplace_back(Shape{0});
            continue;
        }
        Tensor t({B, c.heads, T, T});
        std::copy(L.att.begin(), L.att.end(), t.data.begin());
        out.push_back(std::move(t));
    }
}
}  // namespace

StepStats TrainableStack::evaluate(const int32_t* tokens, const int32_t* targets, int64_t B, int64_t T,
                                    int threads) {
    check_batch(cfg_, tokens, targets, B, T);
    std::vector<const float*> P;
    for (Tensor* t : st_->values) P.push_back(t->ptr());
    const Ops<float> op{!reference_, reference_ ? 1 : threads};
    Acts<float>& a = acts_of(st_->acts);
    const StepStats s = run_model<float>(cfg_, P, nullptr, {}, a, tokens, targets, B, T, false, 0, op);
    keep_attention(cfg_, a, st_->att_out, B, T);
    return s;
}

Tensor TrainableStack::logits(const int32_t* tokens, int64_t B, int64_t T, int threads) {
    check_batch(cfg_, tokens, nullptr, B, T);
    std::vector<const float*> P;
    for (Tensor* t : st_->values) P.push_back(t->ptr());
    const Ops<float> op{!reference_, reference_ ? 1 : threads};
    Acts<float>& a = acts_of(st_->acts);
    run_model<float>(cfg_, P, nullptr, {}, a, tokens, nullptr, B, T, false, 0, op);
    keep_attention(cfg_, a, st_->att_out, B, T);
    Tensor out({B, T, cfg_.vocab});
    std::copy(a.logits.begin(), a.logits.end(), out.data.begin());
    return out;
}

const std::vector<Tensor>& TrainableStack::attention_weights() const { return st_->att_out; }

}  // namespace attn
