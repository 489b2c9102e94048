// The TrainableStack's parameters (attn/nn/trainable_stack.hpp): a TransformerStack built from the
// ModelConfig, whose weights params() lists under PyTorch's names with pointers into the stack
// (log tau beside it), their initialisation, and the stack checked for its own forward. The
// training path (saved activations, forward and backward) is stack_train.cpp.
#include "attn/nn/trainable_stack.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "attn/core/errors.hpp"
#include "attn/core/init.hpp"
#include "attn/core/rng.hpp"
#include "attn/nn/ops.hpp"
#include "stack_train.hpp"

namespace attn {

using stack_train::ParamSpec;
using stack_train::param_specs;

void check_emb_std(double std) {
    if (!(std >= kMinEmbStd && std <= kMaxEmbStd))
        throw InputError(fmt::format("emb_std: must be in [{:g}, {:g}], got {}", kMinEmbStd, kMaxEmbStd, std));
}

void redraw_embeddings(TrainableStack& model, uint64_t seed, double std) {
    check_emb_std(std);
    uint64_t stream = 0;
    for (Param& p : model.params())
        if (p.name == "tok_emb.weight" || p.name == "pos_emb.weight") {
            Rng rng(mix64(seed ^ 0x656d62ULL), ++stream);
            for (float& x : p.value->data) x = rng.normal(0.0f, static_cast<float>(std));
        }
}

namespace stack_train {

std::vector<ParamSpec> param_specs(const ModelConfig& c) {
    const int64_t D = c.d_model, QK = c.heads * c.d_k, VV = c.heads * c.d_v, F = c.d_ff;
    std::vector<ParamSpec> s;
    s.push_back({"tok_emb.weight", {c.vocab, D}, true});
    if (c.pos == PosKind::Learned) s.push_back({"pos_emb.weight", {c.max_seq, D}, true});
    for (int64_t l = 0; l < c.layers; ++l) {
        const std::string p = "blocks." + std::to_string(l) + ".";
        s.push_back({p + "ln1.weight", {D}, false});
        s.push_back({p + "ln1.bias", {D}, false});
        s.push_back({p + "attn.q_proj.weight", {QK, D}, true});
        s.push_back({p + "attn.q_proj.bias", {QK}, false});
        s.push_back({p + "attn.k_proj.weight", {QK, D}, true});
        s.push_back({p + "attn.k_proj.bias", {QK}, false});
        s.push_back({p + "attn.v_proj.weight", {VV, D}, true});
        s.push_back({p + "attn.v_proj.bias", {VV}, false});
        s.push_back({p + "attn.o_proj.weight", {D, VV}, true});
        s.push_back({p + "attn.o_proj.bias", {D}, false});
        const bool m = c.mlp;
        s.push_back({p + "ln2.weight", m ? Shape{D} : Shape{0}, false, m});
        s.push_back({p + "ln2.bias", m ? Shape{D} : Shape{0}, false, m});
        s.push_back({p + "mlp.fc1.weight", m ? Shape{F, D} : Shape{0}, true, m});
        s.push_back({p + "mlp.fc1.bias", m ? Shape{F} : Shape{0}, false, m});
        s.push_back({p + "mlp.fc2.weight", m ? Shape{D, F} : Shape{0}, true, m});
        s.push_back({p + "mlp.fc2.bias", m ? Shape{D} : Shape{0}, false, m});
    }
    s.push_back({"ln_f.weight", {D}, false});
    s.push_back({"ln_f.bias", {D}, false});
    s.push_back({"head.weight", {c.vocab, D}, true});
    if (c.learn_temperature)
        for (int64_t l = 0; l < c.layers; ++l)
            s.push_back({"blocks." + std::to_string(l) + ".attn.log_tau", {1}, false});
    return s;
}

}  // namespace stack_train

std::vector<std::pair<std::string, Shape>> param_shapes(const ModelConfig& cfg) {
    std::vector<std::pair<std::string, Shape>> out;
    for (auto& s : param_specs(cfg.resolved()))
        if (s.used) out.emplace_back(s.name, s.shape);
    return out;
}

namespace {

// The stack a ModelConfig describes: pre-norm, its own head, causal as the config.
StackConfig stack_config(const ModelConfig& c) {
    return StackConfig{.vocab = c.vocab, .positions = c.max_seq, .d_model = c.d_model, .heads = c.heads,
                       .d_k = c.d_k, .d_v = c.d_v, .layers = c.layers, .d_ff = c.d_ff, .causal = c.causal,
                       .norm = NormPlace::Pre, .mlp = c.mlp,
                       .act = c.act == Activation::Relu ? MlpActivation::Relu : MlpActivation::GeluTanh,
                       .scale = c.scale.kind == ScaleKind::InvSqrtDk, .tied_head = false};
}

// Each spec's tensor, in param_specs order: the stack's weights, log tau (kept beside the
// stack, which has no field for it), and `none` (shape {0}) for an attention-only block's
// LN_2 and MLP, which the stack leaves out.
std::vector<Tensor*> bind_params(const ModelConfig& c, const std::vector<ParamSpec>& specs, TransformerStack& s,
                                 std::vector<Tensor>& log_tau, Tensor& none) {
    std::vector<Tensor*> v{&s.tok_emb};
    if (c.pos == PosKind::Learned) v.push_back(&s.pos_emb);
    for (StackLayer& L : s.layers) {
        MultiHeadAttention& a = L.attention;
        for (Tensor* t : {&L.ln1_gamma, &L.ln1_beta, &a.q_proj.W, &a.q_proj.b, &a.k_proj.W, &a.k_proj.b, &a.v_proj.W,
                          &a.v_proj.b, &a.o_proj.W, &a.o_proj.b})
            v.push_back(t);
        for (Tensor* t : {&L.ln2_gamma, &L.ln2_beta, &L.fc.W, &L.fc.b, &L.proj.W, &L.proj.b})
            v.push_back(c.mlp ? t : &none);
    }
    for (Tensor* t : {&s.lnf_gamma, &s.lnf_beta, &s.lm_head}) v.push_back(t);
    for (Tensor& t : log_tau) v.push_back(&t);
    if (v.size() != specs.size()) throw std::logic_error("bind_params: the stack and param_specs disagree");
    for (size_t i = 0; i < v.size(); ++i)
        if (v[i]->shape != specs[i].shape)
            throw std::logic_error("bind_params: " + specs[i].name + " is " + shape_str(v[i]->shape) +
                                   " in the stack, " + shape_str(specs[i].shape) + " in param_specs");
    return v;
}

}  // namespace

TrainableStack::TrainableStack(const ModelConfig& cfg) : cfg_(cfg.resolved()), st_(std::make_unique<State>()) {
    State& st = *st_;
    st.specs = param_specs(cfg_);
    st.stack = TransformerStack(stack_config(cfg_));
    if (cfg_.pos == PosKind::Sinusoidal) nn::sinusoidal_positions(st.stack.pos_emb.ptr(), cfg_.max_seq, cfg_.d_model);
    if (cfg_.learn_temperature) st.log_tau.assign(static_cast<size_t>(cfg_.layers), Tensor(Shape{1}));
    st.values = bind_params(cfg_, st.specs, st.stack, st.log_tau, st.none);
    for (const auto& s : st.specs) st.grads.emplace_back(s.shape);
}
TrainableStack::~TrainableStack() = default;
TrainableStack::TrainableStack(TrainableStack&&) noexcept = default;
TrainableStack& TrainableStack::operator=(TrainableStack&&) noexcept = default;

void TrainableStack::init(uint64_t seed) {
    // One Rng stream per parameter tensor (by index): independent of threads and order.
    auto& v = st_->values;
    const auto& sp = st_->specs;
    for (size_t i = 0; i < sp.size(); ++i) {
        if (!sp[i].used) continue;
        Rng rng(seed, i + 1);
        const std::string& n = sp[i].name;
        auto ends_with = [&](const char* suf) {
            const std::string s(suf);
            return n.size() >= s.size() && n.compare(n.size() - s.size(), s.size(), s) == 0;
        };
        if (n.size() > 8 && n.compare(n.size() - 8, 8, ".log_tau") == 0) {
            v[i]->data[0] = std::log(cfg_.scale.value);
        } else if (n == "tok_emb.weight" || n == "pos_emb.weight") {
            for (auto& x : v[i]->data) x = rng.normal(0.0f, 0.02f);
        } else if (n.find(".ln") != std::string::npos || n.rfind("ln_f", 0) == 0) {
            std::fill(v[i]->data.begin(), v[i]->data.end(), ends_with(".weight") ? 1.0f : 0.0f);
        } else if (ends_with(".weight")) {
            // a Linear: weight and (next in the list, if it is this layer's bias) bias together
            Tensor none;
            const bool has_bias = i + 1 < sp.size() && ends_with(".weight") &&
                                  sp[i + 1].name == n.substr(0, n.size() - 6) + "bias";
            Tensor& b = has_bias ? *v[i + 1] : none;
            init_linear(*v[i], b, cfg_.init, rng);
            if (n.find("q_proj") != std::string::npos || n.find("k_proj") != std::string::npos)
                for (auto& x : v[i]->data) x *= cfg_.qk_init_gain;
            if (has_bias) ++i;
        }
    }
}

std::vector<Param> TrainableStack::params() {
    std::vector<Param> out;
    for (size_t i = 0; i < st_->specs.size(); ++i)
        if (st_->specs[i].used)
            out.push_back({st_->specs[i].name, st_->values[i], &st_->grads[i], st_->specs[i].decay});
    return out;
}

const TransformerStack& TrainableStack::stack() const { return st_->stack; }

const TransformerStack& TrainableStack::to_stack() const {
    const ModelConfig& c = cfg_;
    auto refuse = [](const char* what) { throw InputError(fmt::format("to_stack: the stack has no {}", what)); };
    if (c.scale.kind != ScaleKind::InvSqrtDk && c.scale.kind != ScaleKind::None) refuse("scale but sqrt or none");
    if (c.learn_temperature) refuse("learned temperature");
    if (c.pad_token >= 0) refuse("pad token (its batches are padded by lengths)");
    if (c.bug != AttnBug::None) refuse("planted bugs");
    if (c.attention_variant()) refuse("attention variants or ablated heads");
    return st_->stack;
}

int64_t TrainableStack::num_params() const {
    int64_t n = 0;
    for (const Tensor* t : st_->values) n += t->numel();
    return n;
}

void TrainableStack::set_head_off(std::vector<uint8_t> off) {
    ModelConfig c = cfg_;
    c.head_off = std::move(off);
    c.validate();
    cfg_ = std::move(c);
}

double train_step_flops(const ModelConfig& cfg, int64_t B, int64_t T) {
    const ModelConfig c = cfg.resolved();
    const double N = double(B) * double(T), D = double(c.d_model), H = double(c.heads);
    const double QK = H * double(c.d_k), VV = H * double(c.d_v), F = double(c.d_ff);
    const double per_layer_macs = N * (D * (2 * QK + VV) + VV * D + (c.mlp ? 2 * D * F : 0.0)) +
                                  double(B) * H * double(T) * double(T) * (double(c.d_k) + double(c.d_v));
    const double fwd_macs = double(c.layers) * per_layer_macs + N * D * double(c.vocab);
    return 2.0 * 3.0 * fwd_macs;  // 2 FLOPs per multiply-add; backward = 2x forward
}

void init_for_training(TrainableStack& model, uint64_t seed, double emb_std) {
    model.init(mix64(seed ^ 0x696e6974ULL));  // "init"
    redraw_embeddings(model, seed, emb_std);
}

}  // namespace attn
