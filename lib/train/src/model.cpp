// The TinyTransformer (attn/train/model.hpp).
#include "attn/train/model.hpp"

#include <stdexcept>

namespace attn {
const char* pos_kind_name(PosKind p) { return p == PosKind::Learned ? "learned" : "sinusoidal"; }
const char* activation_name(Activation a) { return a == Activation::Gelu ? "gelu" : "relu"; }
void ModelConfig::validate() const { throw std::logic_error("not yet"); }
ModelConfig ModelConfig::resolved() const { throw std::logic_error("not yet"); }
struct TinyTransformer::State {};
TinyTransformer::TinyTransformer(const ModelConfig& cfg) : cfg_(cfg) { throw std::logic_error("not yet"); }
TinyTransformer::~TinyTransformer() = default;
TinyTransformer::TinyTransformer(TinyTransformer&&) noexcept = default;
TinyTransformer& TinyTransformer::operator=(TinyTransformer&&) noexcept = default;
void TinyTransformer::init(uint64_t) { throw std::logic_error("not yet"); }
StepStats TinyTransformer::forward_backward(const int32_t*, const int32_t*, int64_t, int64_t, uint64_t, int) { throw std::logic_error("not yet"); }
StepStats TinyTransformer::evaluate(const int32_t*, const int32_t*, int64_t, int64_t, int) { throw std::logic_error("not yet"); }
Tensor TinyTransformer::logits(const int32_t*, int64_t, int64_t, int) { throw std::logic_error("not yet"); }
const std::vector<Tensor>& TinyTransformer::attention_weights() const { throw std::logic_error("not yet"); }
std::vector<Param> TinyTransformer::params() { throw std::logic_error("not yet"); }
int64_t TinyTransformer::num_params() const { throw std::logic_error("not yet"); }
double loss_and_grads_f64(const ModelConfig&, const std::vector<std::vector<double>>&, const int32_t*, const int32_t*, int64_t, int64_t, std::vector<std::vector<double>>*, bool, uint64_t) { throw std::logic_error("not yet"); }
double train_step_flops(const ModelConfig&, int64_t, int64_t) { throw std::logic_error("not yet"); }
}  // namespace attn
