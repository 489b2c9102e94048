// Weight initialisers with PyTorch's formulas (see attn/core/init.hpp).
#include "attn/core/init.hpp"

#include <cmath>

#include <fmt/format.h>

#include "attn/core/errors.hpp"

namespace attn {

std::string init_name(const InitSpec& spec) {
    switch (spec.kind) {
        case InitKind::Torch: return "torch";
        case InitKind::XavierUniform: return "xavier_uniform";
        case InitKind::XavierNormal: return "xavier_normal";
        case InitKind::KaimingUniform: return "kaiming_uniform";
        case InitKind::KaimingNormal: return "kaiming_normal";
        case InitKind::Normal: return fmt::format("normal:{}", spec.std);
        case InitKind::Zeros: return "zeros";
    }
    return "?";
}

void init_linear(Tensor& W, Tensor& b, const InitSpec& spec, Rng& rng) {
    // W is [out, in]: fan_in = in, fan_out = out.
    if (W.rank() != 2) throw ShapeError(fmt::format("init_linear: W must be [out, in], got {}", shape_str(W.shape)));
    const double fan_out = static_cast<double>(W.dim(0)), fan_in = static_cast<double>(W.dim(1));
    auto fill_uniform = [&](Tensor& t, double a) {
        for (auto& x : t.data) x = static_cast<float>(-a + 2.0 * a * rng.uniform_double());
    };
    auto fill_normal = [&](Tensor& t, double std) {
        for (auto& x : t.data) x = static_cast<float>(std * rng.normal_double());
    };
    auto zero = [](Tensor& t) { std::fill(t.data.begin(), t.data.end(), 0.0f); };
    switch (spec.kind) {
        case InitKind::Torch: {
            // kaiming_uniform_(a = sqrt(5)) reduces to U(-1/sqrt(fan_in), 1/sqrt(fan_in)); bias the same bound.
            const double bound = fan_in > 0 ? 1.0 / std::sqrt(fan_in) : 0.0;
            fill_uniform(W, bound);
            fill_uniform(b, bound);
            return;
        }
        case InitKind::XavierUniform: fill_uniform(W, std::sqrt(6.0 / (fan_in + fan_out))); break;
        case InitKind::XavierNormal: fill_normal(W, std::sqrt(2.0 / (fan_in + fan_out))); break;
        case InitKind::KaimingUniform: fill_uniform(W, std::sqrt(6.0 / fan_in)); break;
        case InitKind::KaimingNormal: fill_normal(W, std::sqrt(2.0 / fan_in)); break;
        case InitKind::Normal: fill_normal(W, spec.std); break;
        case InitKind::Zeros: zero(W); break;
    }
    zero(b);
}

}  // namespace attn
