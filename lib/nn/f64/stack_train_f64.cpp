// The stack's training engine in double precision (stack_engine.hpp), for the tests'
// finite-difference checks (attn/nn/stack_f64.hpp): in attn_nn_f64, which the library does not ship.
#include "attn/nn/stack_f64.hpp"

#include <cstdint>
#include <string>
#include <vector>

#include "stack_engine.hpp"

namespace attn {

double loss_and_grads_f64(const ModelConfig& cfg, const std::vector<std::vector<double>>& params,
                          const int32_t* tokens, const int32_t* targets, int64_t B, int64_t T,
                          std::vector<std::vector<double>>* grads, bool train, uint64_t step_seed) {
    const ModelConfig c = cfg.resolved();
    const auto specs = param_specs(c);
    // params and grads hold the used parameters (params() order); the unused ones (an
    // attention-only model's MLP) are empty here
    std::vector<size_t> pub(specs.size(), SIZE_MAX);
    size_t n_used = 0;
    for (size_t i = 0; i < specs.size(); ++i)
        if (specs[i].used) pub[i] = n_used++;
    if (params.size() != n_used)
        throw InputError("params: " + std::to_string(params.size()) + " tensors, the model has " +
                         std::to_string(n_used));
    static const double kNone = 0.0;
    Ptrs<double> p;
    for (size_t i = 0; i < specs.size(); ++i) {
        if (pub[i] == SIZE_MAX) {
            p.P.push_back(&kNone);
            p.sizes.push_back(0);
            continue;
        }
        const auto& v = params[pub[i]];
        if (static_cast<int64_t>(v.size()) != shape_numel(specs[i].shape))
            throw ShapeError("params: " + specs[i].name + " has " + std::to_string(v.size()) +
                             " values, expected " + shape_str(specs[i].shape));
        p.P.push_back(v.data());
        p.sizes.push_back(shape_numel(specs[i].shape));
    }
    std::vector<double> none_grad(1, 0.0);
    if (grads) {
        grads->assign(n_used, {});
        for (size_t i = 0; i < specs.size(); ++i) {
            if (pub[i] == SIZE_MAX) {
                p.G.push_back(none_grad.data());
                continue;
            }
            (*grads)[pub[i]].assign(static_cast<size_t>(p.sizes[i]), 0.0);
            p.G.push_back((*grads)[pub[i]].data());
        }
    }
    check_batch(c, tokens, targets, B, T);
    Acts<double> a;
    const Ops<double> op{false, 1};
    return run_model<double>(c, p.P, grads ? &p.G : nullptr, p.sizes, a, tokens, targets, B, T, train, step_seed, op)
        .loss;
}

}  // namespace attn
