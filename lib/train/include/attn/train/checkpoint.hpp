// attn/train/checkpoint.hpp: a trained TrainableStack saved and loaded as safetensors.
//
// The file holds every parameter under its params() name (F32) and, in __metadata__,
// "format": "attn-tiny-transformer", "attn.config": the ModelConfig as JSON, plus any
// extra string pairs the caller adds (task, step, loss, ...). Loading rebuilds the model
// from the config and refuses a file whose tensors do not match it: a missing, extra or
// misshapen tensor is an InputError naming the file and the tensor.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "attn/nn/trainable_stack.hpp"

namespace attn {

// Written whole or not at all (write_file_atomic). Throws InputError if unwritable.
void save_checkpoint(const std::string& path, TrainableStack& model,
                     const std::map<std::string, std::string>& extra = {});

struct Checkpoint {
    TrainableStack model;
    std::map<std::string, std::string> metadata;  // everything in __metadata__
};
// Also refuses (InputError naming the file and the tensor) a weight that is NaN, infinite
// or larger in magnitude than kMaxCheckpointWeight, and (naming the field) a config field
// that is unknown, of the wrong type, or out of range (max_seq at most kMaxTaskSeq).
Checkpoint load_checkpoint(const std::string& path);
// The largest |weight| a checkpoint may hold: training here never comes within a factor
// of 1000 of it, and a weight of this size already overflows float32 in a few products.
inline constexpr float kMaxCheckpointWeight = 1e6f;

// What `attn train --save` records about a run in the metadata, and `--load` reads back:
// the task and its sizes, the steps done and the seed, the final held-out scores. The keys
// are written here once.
namespace checkpoint_keys {
inline constexpr const char* task = "attn.task";
inline constexpr const char* seq = "attn.task.seq";
inline constexpr const char* symbols = "attn.task.symbols";
inline constexpr const char* distance = "attn.task.distance";
inline constexpr const char* queries = "attn.task.queries";
inline constexpr const char* steps = "attn.train.steps";
inline constexpr const char* seed = "attn.train.seed";
inline constexpr const char* eval_loss = "attn.eval.loss";
inline constexpr const char* eval_accuracy = "attn.eval.accuracy";
}  // namespace checkpoint_keys

struct TrainingRecord {
    std::string task;
    int64_t seq = 0, symbols = 0, distance = 0, queries = 0;
    int64_t steps = 0;
    uint64_t seed = 0;
    double eval_loss = 0, eval_accuracy = 0;
};
// The record as metadata pairs for save_checkpoint's `extra`.
std::map<std::string, std::string> training_metadata(const TrainingRecord& r);
// One of the task sizes (seq, symbols, distance, queries) a checkpoint's metadata holds:
// nullopt when absent; InputError "metadata KEY is not a positive integer" when malformed.
std::optional<int64_t> metadata_size(const std::map<std::string, std::string>& metadata, const char* key);

// The config as the JSON string stored under "attn.config", and back (InputError on a
// malformed or invalid config; `what` names the source in the message).
std::string config_to_json(const ModelConfig& cfg);
ModelConfig config_from_json(const std::string& json, const std::string& what);

}  // namespace attn
