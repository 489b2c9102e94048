#include "attn/train/optim.hpp"
#include <stdexcept>
namespace attn {
void AdamW::step(std::vector<Param>&) { throw std::logic_error("not yet"); }
void Sgd::step(std::vector<Param>&) { throw std::logic_error("not yet"); }
double clip_grad_norm(std::vector<Param>&, double) { throw std::logic_error("not yet"); }
}  // namespace attn
