// The training ops and the TrainableStack against PyTorch autograd fixtures
// (tests/fixtures/train, made by scripts/make-train-golden.py with python3-torch 1.13).
//
// The fixtures hold PyTorch's answers computed in float64 from float32 inputs and rounded
// to float32. attn's float32 code is held to the norm-wise relative error that
// test_grad_golden.cpp and test_golden.cpp use:
//   max |attn - torch| / max |torch| <= 1e-5 per tensor
// float32 (eps 1.2e-7) sums of at most a few hundred terms in another order move each
// result by a few eps of the terms' size (~1e-6 of the tensor's scale); element-wise
// relative error would blow up on entries that cancel to nearly 0. A bias gradient is
// measured against max(|db|, |dW|) of its own Linear: db_k is exactly 0 in exact
// arithmetic (softmax ignores the constant q.b_k added to a whole score row), so both
// sides hold rounding noise of the size of the k projection's gradients.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "attn/io/safetensors.hpp"
#include "attn/train/checkpoint.hpp"
#include "attn/nn/trainable_stack.hpp"
#include "attn/nn/ops.hpp"
#include "test_util.hpp"

namespace tr = attn::nn;
using attn::SafeTensors;
using attn::Tensor;

namespace {

std::string fixture(const std::string& name) { return attn::test::source_path("tests/fixtures/train/" + name); }

void check_golden(const std::string& what, const float* got, const Tensor& ref, double scale = 0) {
    for (float r : ref.data) scale = std::max(scale, double(std::fabs(r)));
    double worst = 0;
    for (int64_t i = 0; i < ref.numel(); ++i) worst = std::max(worst, std::fabs(double(got[i]) - ref.data[size_t(i)]));
    INFO(what << ": max |attn - torch| = " << worst << ", max |torch| = " << scale);
    CHECK(worst <= 1e-5 * scale);
}

double max_abs(const Tensor& t) {
    double m = 0;
    for (float v : t.data) m = std::max(m, double(std::fabs(v)));
    return m;
}

std::vector<int32_t> ints(const Tensor& t) {
    std::vector<int32_t> v;
    for (float f : t.data) v.push_back(static_cast<int32_t>(f));
    return v;
}

}  // namespace

TEST_CASE("nn golden: LayerNorm, GELU, embedding and cross-entropy match PyTorch autograd") {
    const SafeTensors f = SafeTensors::load(fixture("ops.safetensors"));
    auto T = [&](const char* n) { return f.to_float(n); };
    SUBCASE("layernorm") {
        const Tensor x = T("ln.x"), w = T("ln.w"), b = T("ln.b"), dout = T("ln.dout");
        const int64_t N = x.dim(0), D = x.dim(1);
        std::vector<float> out(static_cast<size_t>(N * D)), mean(static_cast<size_t>(N)), rstd(static_cast<size_t>(N)),
            dx(out.size()), dw(static_cast<size_t>(D)), db(static_cast<size_t>(D));
        tr::layernorm_forward(out.data(), mean.data(), rstd.data(), x.ptr(), w.ptr(), b.ptr(), N, D);
        tr::layernorm_backward(dx.data(), dw.data(), db.data(), dout.ptr(), x.ptr(), w.ptr(), mean.data(), rstd.data(),
                               N, D);
        check_golden("ln out", out.data(), T("ln.out"));
        check_golden("ln dx", dx.data(), T("ln.dx"));
        check_golden("ln dw", dw.data(), T("ln.dw"));
        check_golden("ln db", db.data(), T("ln.db"));
    }
    SUBCASE("gelu (tanh)") {
        const Tensor x = T("gelu.x"), dout = T("gelu.dout");
        std::vector<float> out(static_cast<size_t>(x.numel())), dx(out.size());
        tr::gelu_forward(out.data(), x.ptr(), x.numel());
        tr::gelu_backward(dx.data(), x.ptr(), dout.ptr(), x.numel());
        check_golden("gelu out", out.data(), T("gelu.out"));
        check_golden("gelu dx", dx.data(), T("gelu.dx"));
    }
    SUBCASE("embedding") {
        const Tensor wte = T("emb.wte"), pos = T("emb.pos"), dout = T("emb.dout");
        const auto tok = ints(T("emb.tokens"));
        const int64_t B = dout.dim(0), Tn = dout.dim(1), D = dout.dim(2);
        std::vector<float> out(static_cast<size_t>(B * Tn * D)), dwte(static_cast<size_t>(wte.numel())),
            dpos(static_cast<size_t>(pos.numel()));
        tr::embedding_forward(out.data(), tok.data(), wte.ptr(), pos.ptr(), B, Tn, D);
        tr::embedding_backward(dwte.data(), dpos.data(), dout.ptr(), tok.data(), B, Tn, D);
        check_golden("emb out", out.data(), T("emb.out"));
        check_golden("emb dwte", dwte.data(), T("emb.dwte"));
        check_golden("emb dpos", dpos.data(), T("emb.dpos"));
    }
    SUBCASE("cross-entropy") {
        const Tensor z = T("xent.logits");
        const auto tgt = ints(T("xent.targets"));
        const int64_t N = z.dim(0), V = z.dim(1);
        std::vector<float> losses(static_cast<size_t>(N)), probs(static_cast<size_t>(N * V)), dz(probs.size());
        const int64_t n = tr::crossentropy_forward(losses.data(), probs.data(), z.ptr(), tgt.data(), N, V);
        float loss = 0;
        for (float l : losses) loss += l;
        loss /= float(n);
        tr::crossentropy_backward(dz.data(), probs.data(), tgt.data(), 1.0f / float(n), N, V);
        check_golden("xent loss", &loss, T("xent.loss"));
        check_golden("xent dlogits", dz.data(), T("xent.dlogits"));
    }
}

TEST_CASE("nn golden: TrainableStack loss and every parameter gradient match PyTorch autograd") {
    for (const char* name : {"model_decoder.safetensors", "model_encoder_dk_ne_dv.safetensors"}) {
        CAPTURE(name);
        const SafeTensors f = SafeTensors::load(fixture(name));
        const attn::ModelConfig cfg = attn::config_from_json(f.metadata().at("attn.config"), name);
        attn::TrainableStack m(cfg);
        for (auto& p : m.params()) *p.value = f.to_float("param." + p.name, p.value->shape);
        const Tensor tokT = f.to_float("tokens");
        const auto tok = ints(tokT), tgt = ints(f.to_float("targets"));
        const int64_t B = tokT.dim(0), T = tokT.dim(1);
        for (bool ref : {false, true}) {
            CAPTURE(ref);
            m.set_reference_path(ref);
            const attn::StepStats s = m.forward_backward(tok.data(), tgt.data(), B, T, 0, 2);
            const float loss = float(s.loss);
            check_golden("loss", &loss, f.to_float("loss"));
            for (auto& p : m.params()) {
                double scale = 0;  // a bias against its Linear's weight gradient too
                const std::string suffix = ".bias", stem = p.name.substr(0, p.name.size() - suffix.size());
                if (p.name.size() > suffix.size() &&
                    p.name.compare(p.name.size() - suffix.size(), suffix.size(), suffix) == 0 &&
                    f.has("grad." + stem + ".weight") && p.name.find("ln") == std::string::npos)
                    scale = max_abs(f.to_float("grad." + stem + ".weight"));
                check_golden("grad " + p.name, p.grad->ptr(), f.to_float("grad." + p.name), scale);
            }
        }
    }
}
