// attn/train/checkpoint.hpp: a trained TinyTransformer saved and loaded as safetensors.
//
// The file holds every parameter under its params() name (F32) and, in __metadata__,
// "format": "attn-tiny-transformer", "attn.config": the ModelConfig as JSON, plus any
// extra string pairs the caller adds (task, step, loss, ...). Loading rebuilds the model
// from the config and refuses a file whose tensors do not match it: a missing, extra or
// misshapen tensor is an InputError naming the file and the tensor.
#pragma once

#include <map>
#include <string>

#include "attn/train/model.hpp"

namespace attn {

// Written whole or not at all (write_file_atomic). Throws InputError if unwritable.
void save_checkpoint(const std::string& path, TinyTransformer& model,
                     const std::map<std::string, std::string>& extra = {});

struct Checkpoint {
    TinyTransformer model;
    std::map<std::string, std::string> metadata;  // everything in __metadata__
};
// Also refuses (InputError naming the file and the tensor) a weight that is NaN, infinite
// or larger in magnitude than kMaxCheckpointWeight, and (naming the field) a config field
// that is unknown, of the wrong type, or out of range (max_seq at most kMaxTaskSeq).
Checkpoint load_checkpoint(const std::string& path);
// The largest |weight| a checkpoint may hold: training here never comes within a factor
// of 1000 of it, and a weight of this size already overflows float32 in a few products.
inline constexpr float kMaxCheckpointWeight = 1e6f;

// The config as the JSON string stored under "attn.config", and back (InputError on a
// malformed or invalid config; `what` names the source in the message).
std::string config_to_json(const ModelConfig& cfg);
ModelConfig config_from_json(const std::string& json, const std::string& what);

}  // namespace attn
