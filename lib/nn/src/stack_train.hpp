// stack_train.hpp (inside lib/nn): what the TrainableStack's two sources share: its parameter
// list (trainable_stack.cpp builds it on the stack's tensors; the engine of stack_train.cpp reads
// it by these offsets) and the model's state.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "attn/core/tensor.hpp"
#include "attn/nn/model_config.hpp"
#include "attn/nn/stack.hpp"
#include "attn/nn/trainable_stack.hpp"

namespace attn {
namespace stack_train {

// Offsets inside one block's run of 16 parameters, in params() order.
enum BlockParam {
    kLn1W, kLn1B, kQW, kQB, kKW, kKB, kVW, kVB, kOW, kOB, kLn2W, kLn2B, kFc1W, kFc1B, kFc2W, kFc2B, kPerBlock
};

struct ParamSpec {
    std::string name;
    Shape shape;
    bool decay;
    bool used = true;  // false: a block's ln2 and MLP of an attention-only model, kept (empty) so
                       // that the block's parameters keep their offsets (kPerBlock)
};

// Every parameter of a model with this config, in params() order, with the unused ones.
std::vector<ParamSpec> param_specs(const ModelConfig& c);

// The activations a pass saves for its backward (stack_train.cpp), made by the first pass.
struct SavedActs;
struct SavedActsDelete {
    void operator()(SavedActs* a) const noexcept;
};

}  // namespace stack_train

struct TrainableStack::State {
    std::vector<stack_train::ParamSpec> specs;
    TransformerStack stack;        // the weights
    std::vector<Tensor> log_tau;   // (1) per layer with a learned temperature, else none
    Tensor none = Tensor(Shape{0});
    std::vector<Tensor*> values;   // per spec: into stack, log_tau or none
    std::vector<Tensor> grads;     // per spec, the shapes of values
    std::vector<Tensor> att_out;   // attention weights of the last forward, per layer
    std::unique_ptr<stack_train::SavedActs, stack_train::SavedActsDelete> acts;  // the training path's
};

}  // namespace attn
