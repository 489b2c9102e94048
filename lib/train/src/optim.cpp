// AdamW, SGD and gradient clipping (attn/train/optim.hpp), PyTorch's update rules.
#include "attn/train/optim.hpp"

#include <cmath>

#include "attn/core/errors.hpp"

namespace attn {

namespace {
void match_state(std::vector<std::vector<float>>& state, const std::vector<Param>& params, const char* who) {
    if (state.empty()) {
        for (const auto& p : params) state.emplace_back(static_cast<size_t>(p.value->numel()), 0.0f);
        return;
    }
    if (state.size() != params.size())
        throw InputError(std::string(who) + ": the parameter list changed between steps");
    for (size_t i = 0; i < params.size(); ++i)
        if (static_cast<int64_t>(state[i].size()) != params[i].value->numel())
            throw InputError(std::string(who) + ": parameter '" + params[i].name + "' changed size between steps");
}
}  // namespace

void AdamW::step(std::vector<Param>& params) {
    match_state(m_, params, "AdamW");
    match_state(v_, params, "AdamW");
    ++t_;
    const double bc1 = 1.0 - std::pow(static_cast<double>(beta1), static_cast<double>(t_));
    const double bc2 = 1.0 - std::pow(static_cast<double>(beta2), static_cast<double>(t_));
    // as torch's single-tensor AdamW: step_size = lr / bc1, denom = sqrt(v) / sqrt(bc2) + eps
    const float step_size = static_cast<float>(static_cast<double>(lr) / bc1);
    const float bc2_sqrt = static_cast<float>(std::sqrt(bc2));
    for (size_t i = 0; i < params.size(); ++i) {
        float* p = params[i].value->ptr();
        const float* g = params[i].grad->ptr();
        float* m = m_[i].data();
        float* v = v_[i].data();
        const float decay = params[i].decay ? 1.0f - lr * weight_decay : 1.0f;
        for (int64_t j = 0, n = params[i].value->numel(); j < n; ++j) {
            p[j] *= decay;
            m[j] = beta1 * m[j] + (1.0f - beta1) * g[j];
            v[j] = beta2 * v[j] + (1.0f - beta2) * g[j] * g[j];
            const float denom = std::sqrt(v[j]) / bc2_sqrt + eps;
            p[j] -= step_size * m[j] / denom;
        }
    }
}

void Sgd::step(std::vector<Param>& params) {
    const bool first = buf_.empty();
    if (momentum != 0.0f) match_state(buf_, params, "SGD");
    for (size_t i = 0; i < params.size(); ++i) {
        float* p = params[i].value->ptr();
        const float* g = params[i].grad->ptr();
        const float wd = params[i].decay ? weight_decay : 0.0f;
        for (int64_t j = 0, n = params[i].value->numel(); j < n; ++j) {
            float d = g[j] + wd * p[j];
            if (momentum != 0.0f) {
                float& b = buf_[i][static_cast<size_t>(j)];
                b = first ? d : momentum * b + d;
                d = b;
            }
            p[j] -= lr * d;
        }
    }
}

double clip_grad_norm(std::vector<Param>& params, double max_norm) {
    double ss = 0;
    for (const auto& p : params)
        for (float g : p.grad->data) ss += static_cast<double>(g) * static_cast<double>(g);
    const double total = std::sqrt(ss);
    if (max_norm > 0 && total > max_norm) {
        const auto coef = static_cast<float>(max_norm / (total + 1e-6));
        for (auto& p : params)
            for (float& g : p.grad->data) g *= coef;
    }
    return total;
}

}  // namespace attn
