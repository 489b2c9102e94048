// Golden parity: attn's multi-head attention against PyTorch float32 results
// committed in tests/fixtures/golden (made by scripts/make-golden.py).
//
// Tolerance: max |attn - torch| / max |torch| <= 1e-5 per tensor (norm-wise
// relative error). Both sides are float32 (eps = 1.2e-7); the dot products run
// over at most 64 terms, and the two libraries sum them in different orders,
// which moves each result by a few eps of the terms' magnitude: ~1e-6 of the
// tensor's scale. Element-wise relative error is not used because entries that
// cancel to nearly 0 would make any rounding look huge. Every other backend goes
// through the same fixtures in test_parity.cpp.
#include <doctest/doctest.h>

#include <cmath>

#include "golden.hpp"

using namespace attn;

static double normwise_rel(const Tensor& a, const Tensor& ref) {
    double scale = 0;
    for (float v : ref.data) scale = std::max(scale, static_cast<double>(std::fabs(v)));
    return max_abs_diff(a, ref) / std::max(scale, 1e-30);
}

TEST_CASE("golden: multi-head attention matches PyTorch within 1e-5 relative") {
    const auto names = test::golden_names();
    REQUIRE(names.size() >= 9);
    for (const std::string& name : names) {
        SUBCASE(name.c_str()) {
            const test::Golden g = test::load_golden(name);
            const Dump& d = g.dump;
            ForwardRecord rec;
            g.mha.forward(d.tensors.at("x"), g.mask, g.opt, &rec);
            const std::pair<const char*, const Tensor*> outputs[] = {
                {"Q", &rec.Q},           {"K", &rec.K},           {"V", &rec.V},  {"weights", &rec.attn.weights},
                {"head_out", &rec.head_out}, {"merged", &rec.merged}, {"out", &rec.out}};
            for (const auto& output : outputs) {
                const auto& t = output.first;  // not a structured binding: clang 14 cannot capture one (INFO)
                const Tensor& got = *output.second;
                const double err = normwise_rel(got, d.tensors.at(t));
                INFO(name << " tensor " << t << " rel err " << err);
                CHECK(err <= 1e-5);
            }
        }
    }
}
