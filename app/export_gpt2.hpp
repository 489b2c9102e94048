// export_gpt2.hpp: attn train's tiny Transformer written as a GPT-2 folder
// (attn train --export-gpt2), so that attn model and transformers' GPT2LMHeadModel open it.
#pragma once

#include <initializer_list>
#include <map>
#include <string>
#include <string_view>
#include <utility>

#include "attn/nn/trainable_stack.hpp"
#include "attn/train/tasks.hpp"

namespace attn::cli {

// The rules a model and task must meet to be a GPT-2, checked before any training:
// a decoder (causal) with learned positions, GELU, scores scaled by 1/sqrt(Dk), Dk = Dv =
// D / H, no learned temperature, and a task whose every token is one byte (chars,
// induction, distance with at most 94 symbols); and that `dir` is a folder, or can be made
// one (its nearest existing parent a writable folder). InputError naming the option and the rule.
void check_gpt2_export(const ModelConfig& config, const Task& task, const std::string& dir);

// The run's other output files (option, path; "" and "-" skipped) must not lie inside the
// export folder `dir`, where the export would replace or mix with them. InputError naming the
// option whose file lies there.
void check_outside_gpt2_export(const std::string& dir,
                               std::initializer_list<std::pair<std::string_view, const std::string*>> outputs);

// The model as a GPT-2 folder in `dir` (save_gpt2_folder): the token and position
// embeddings, each block's LayerNorms, q/k/v/o (into c_attn, c_proj) and MLP (an
// attention-only block gets an MLP of width 1 whose weights are zero: it adds exactly 0),
// ln_f, and the untied output head. `provenance` goes into config.json and the weights'
// metadata.
void export_gpt2(const std::string& dir, TrainableStack& model, const Task& task,
                 const std::map<std::string, std::string>& provenance);

}  // namespace attn::cli
