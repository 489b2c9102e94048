// attn/model/gpt2.hpp: a GPT-2-family decoder read from a Hugging Face folder, built from
// attn's pieces, with the byte-level BPE tokenizer (attn/model/bpe.hpp).
//
//   ids (T)                                   B = 1: one sequence
//   x = wte[ids] + wpe[t]                     (1, T, D)   learned positions
//   L x:  a = MHA(LN_1(x), causal mask)       (1, T, D)   weights (1, H, T, T) recorded
//         x = x + a                           pre-norm, as GPT-2
//         f = W_2 gelu(W_1 LN_2(x) + b_1) + b_2   (1, T, I) -> (1, T, D), GELU in its tanh form
//         x = x + f
//   logits = LN_f(x) wte^T                    (T, V)      the LM head tied to the embedding
//
// The folder: config.json (model_type "gpt2"; n_layer, n_head, n_embd, n_positions,
// vocab_size, n_inner, layer_norm_epsilon, activation_function), model.safetensors
// (float32, float16 or bfloat16; names as GPT2LMHeadModel's state dict, "transformer."
// prefixed or bare), vocab.json + merges.txt or tokenizer.json. The model is a configuration
// of lib/nn's Transformer stack (attn/nn/stack.hpp: pre-norm, causal, learned positions, the
// head tied to the token embedding): GPT-2's projections are Conv1D modules, whose weight is
// stored [in, out], the transpose of nn.Linear's [out, in]; c_attn (D, 3D) holds W_q | W_k |
// W_v side by side. load() transposes each into the stack's attn::Linear weights once, so
// every weight is inspectable; forward() is the stack's readable forward (every activation can
// be cached under TransformerLens's names and a head's output replaced), step() its KV-cache step.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "attn/core/tensor.hpp"
#include "attn/model/bpe.hpp"
#include "attn/nn/kv_cache.hpp"
#include "attn/nn/stack.hpp"

namespace attn {

struct Gpt2Config {
    int64_t vocab_size = 50257, n_positions = 1024, n_embd = 768, n_layer = 12, n_head = 12;
    int64_t n_inner = 0;  // the feed-forward width; config.json's null: 4 * n_embd
    float layer_norm_epsilon = 1e-5f;
    std::string activation = "gelu_new";  // gelu_new, gelu_pytorch_tanh, gelu_fast (tanh form), gelu (erf)
    bool scale_attn_weights = true;       // scores / sqrt(Dk); false: no scaling
    // false: lm_head.weight in the weights file (true: wte, as transformers ties them)
    bool tie_word_embeddings = true;
    // What `attn train --export-gpt2` wrote of its run ("attn" in config.json): the task and its sequence
    // length ("" and 0 for any other model).
    std::string trained_task;
    int64_t trained_seq = 0;
};

// The files of a GPT-2 folder, each checked to exist. The tokenizer is vocab.json + merges.txt
// when the folder has both (the files GPT2Tokenizer reads), else tokenizer.json (Hugging Face's
// fast-tokenizer file); then vocab and tokenizer_json both name tokenizer.json and merges is "".
struct Gpt2Files {
    std::string dir, config, weights, vocab, merges;
    std::string tokenizer_json;  // "" when vocab.json + merges.txt are read
};

// The model_type config.json of a folder declares ("gpt2", "bert", ...), "" when the folder
// or its config.json is missing or says none. Throws InputError on a config.json that is
// not JSON.
std::string folder_model_type(const std::string& dir);
// A folder's config.json read once: its model_type as folder_model_type says it and, when that is
// "gpt2", the config checked as read_gpt2_config checks it (the same errors).
struct FolderConfig {
    std::string model_type;
    std::optional<Gpt2Config> gpt2;
};
FolderConfig read_folder_config(const std::string& dir);
// Throws InputError naming the folder and the missing file.
Gpt2Files locate_gpt2(const std::string& dir);
// config.json, checked: model_type "gpt2" (or a GPT2 architecture), every size positive
// and within bounds, n_embd a multiple of n_head, 0 < layer_norm_epsilon < 1, a known
// activation, and no option this code does not implement (cross-attention, attention
// scaled by the layer index). InputError naming the file and the rule.
Gpt2Config read_gpt2_config(const Gpt2Files& files);
// vocab.json + merges.txt, or tokenizer.json (BpeTokenizer::parse_tokenizer_json says what
// it takes); InputError also when the vocabulary has more tokens than the config's
// vocab_size (their ids would index past the embedding), except an added <|endoftext|> just
// past it in tokenizer.json (what transformers writes for a vocabulary without one; typed in
// a text, its id is refused by forward()).
BpeTokenizer load_gpt2_tokenizer(const Gpt2Files& files, const Gpt2Config& config);

// The stack a GPT-2 of this config is: pre-norm, causal, learned positions, the MLP's GELU as
// `activation` says (gelu: the erf form; the others the tanh form), the head tied to the token
// embedding unless tie_word_embeddings is false.
StackConfig gpt2_stack_config(const Gpt2Config& c);

// forward() records every activation under TransformerLens's hook names (TransformerStack::
// cache_names(); the table is in docs/decoder.md), in the order the pass made them:
//   hook_embed, hook_pos_embed            (1, T, D)   wte[ids], wpe[t]
//   blocks.l.hook_resid_pre               (1, T, D)   the residual stream entering block l
//   blocks.l.ln1.hook_normalized          (1, T, D)   LN_1 output (gamma and beta applied)
//   blocks.l.attn.hook_q, hook_k, hook_v  (1, H, T, Dk)
//   blocks.l.attn.hook_attn_scores        (1, H, T, T) Q K^T / sqrt(Dk), -inf where the causal mask forbids
//   blocks.l.attn.hook_pattern            (1, H, T, T) softmax of the scores: the weights
//   blocks.l.attn.hook_z                  (1, H, T, Dk) each head's output, weights V (after any ablation)
//   blocks.l.hook_attn_out                (1, T, D)   merged z through c_proj (W_o, b_o)
//   blocks.l.hook_resid_mid               (1, T, D)   resid_pre + attn_out
//   blocks.l.ln2.hook_normalized          (1, T, D)   LN_2 output
//   blocks.l.mlp.hook_pre, hook_post      (1, T, I)   c_fc output, then after GELU
//   blocks.l.hook_mlp_out                 (1, T, D)   c_proj of the MLP
//   blocks.l.hook_resid_post              (1, T, D)   resid_mid + mlp_out = resid_pre of block l + 1
//   ln_final.hook_normalized              (1, T, D)   LN_f output
//   logits                                (T, V)
// TransformerLens orders q, k, v and z (batch, pos, head, d_head); attn keeps its attention
// layout (B, H, T, Dk), as the scores and the pattern.

class Gpt2Model {
public:
    Gpt2Config config;
    // The weights: stack.tok_emb (wte), pos_emb (wpe), per layer ln1 (ln_1), attention (c_attn
    // split into q, k, v; c_proj as o), ln2 (ln_2), fc (mlp.c_fc), proj (mlp.c_proj); lnf (ln_f);
    // lm_head when not tied.
    TransformerStack stack;
    Gpt2Files files;  // what load() read

    // model.safetensors + config.json of a folder. InputError names the file and the
    // tensor: a missing one, a wrong shape, an integer dtype, a NaN, infinite or absurd value
    // (|w| past kMaxWeightMagnitude: check_weight_values, attn/io/guards.hpp),
    // or a tensor that is not part of the model (the causal-mask buffers attn.bias and
    // attn.masked_bias that older transformers saved are skipped).
    static Gpt2Model load(const Gpt2Files& files);
    // The same with the folder's config already read (read_gpt2_config(files)), so a caller
    // that checked the config first does not read and check config.json twice.
    static Gpt2Model load(const Gpt2Files& files, const Gpt2Config& config);

    // The whole sequence with the causal mask: TransformerStack::forward. InputError on no
    // ids, more than n_positions, an id outside the vocabulary, or an ablated head outside
    // the model (or named twice).
    StackOutput forward(const std::vector<int32_t>& ids, const StackOptions& opt = {}) const {
        return stack.forward(ids, opt, vocab_name());
    }

    // An empty KV cache for this model (batch 1).
    KvCache make_cache() const { return stack.make_cache(); }
    // One token at the position after those in `cache`: appends its keys and values to
    // every layer and returns its logits (V). attentions, if given, receives each layer's
    // weights of this query over the cached keys (1, H, 1, Tk). The same numbers as
    // forward() to float32 rounding. InputError past n_positions or on a bad id.
    Tensor step(int32_t id, KvCache& cache, std::vector<Tensor>* attentions = nullptr) const {
        return stack.step(id, cache, attentions, vocab_name());
    }

    // A GPT-2 as transformers initialises one before training: every weight and embedding
    // N(0, 0.02^2), the attention's and the MLP's c_proj N(0, (0.02 / sqrt(2 n_layer))^2),
    // biases 0, LayerNorm gamma 1 and beta 0; each tensor its own Rng stream of `seed`.
    static Gpt2Model random(const Gpt2Config& config, uint64_t seed);

    const Tensor& head() const { return stack.head(); }
    int64_t head_dim() const { return config.n_embd / config.n_head; }
    // How messages name the vocabulary: the vocab file, or "the model".
    std::string vocab_name() const { return files.vocab.empty() ? "the model" : files.vocab; }
};

// Decoding: the prompt runs through the KV cache token by token, then each step appends the
// chosen token. temperature 0: greedy (the arg max; the lowest id on a tie); > 0: a draw from
// softmax(logits / temperature) with Rng(seed, step): the same seed, the same tokens.
struct Gpt2GenerateOptions {
    int64_t steps = 20;
    double temperature = 0.0;
    uint64_t seed = 0;
    bool record_attention = false;  // per step, the attention of the query that chose the token
};
struct Gpt2Step {
    int32_t id = 0;
    float prob = 0;                  // its probability under softmax(logits / T) (T = 1 when greedy)
    std::vector<Tensor> attentions;  // if recorded: per layer (1, H, 1, Tk), the previous token's query
                                     // over the Tk tokens before this one (its logits chose this token)
};
// InputError when the prompt is empty, prompt + steps exceed n_positions, or the temperature
// is neither 0 nor in [0.01, 100]; NumericError when a step's logits are not finite.
std::vector<Gpt2Step> gpt2_generate(const Gpt2Model& m, const std::vector<int32_t>& prompt,
                                    const Gpt2GenerateOptions& opt);
// The mean next-token cross-entropy (nats) of a forward pass: -log softmax(logits row t)[ids[t + 1]]
// over t = 0 .. T-2. InputError with fewer than 2 ids (nothing to predict); NumericError when
// the loss is not finite.
double gpt2_loss(const Tensor& logits, const std::vector<int32_t>& ids);
// Throws NumericError naming `where` ("at position 3") unless every one of the V logits is finite.
void check_finite_logits(const float* logits, int64_t V, std::string_view where);

// softmax of one logit row (V), in double, as float probabilities.
std::vector<float> softmax_probs(const float* logits, int64_t V, double temperature = 1.0);

// The decoders attn ships in data/decoders (each trained by attn train --export-gpt2; the
// command, seed and commit are in its config.json): a character-level decoder trained on
// data/macbeth.txt, the default of attn model's decoder commands, and a 2-layer
// attention-only decoder trained on the induction task.
inline constexpr const char* kMacbethDecoder = "macbeth-char";
inline constexpr const char* kInductionDecoder = "induction-2l";
// The folder of a shipped decoder: $ATTN_DECODER_DIR when set (for any name), else
// data/decoders/NAME in the working folder, an installed share/attn/data, or beside the
// executable's parent (as the default encoder is found).
std::string default_decoder_dir(std::string_view name = kMacbethDecoder);

// Writes `m` as a GPT-2 folder that Gpt2Model::load and transformers' GPT2LMHeadModel read:
// config.json (model_type "gpt2", the sizes, tie_word_embeddings as m.lm_head says, and
// `provenance` under the key "attn"), model.safetensors (float32, Conv1D layouts, names
// "transformer."-prefixed as GPT2LMHeadModel saves them, `provenance` in __metadata__ beside
// "format": "pt"), vocab.json (token i: the bytes tokens[i], in GPT-2's byte alphabet) and a
// merges.txt of no merges (one token per byte). `dir` is created if missing; each file is
// written whole or not at all. InputError when tokens.size() differs from vocab_size, a token
// is empty or repeated, or the folder cannot be written.
void save_gpt2_folder(const std::string& dir, const Gpt2Model& m, const std::vector<std::string>& tokens,
                      const std::map<std::string, std::string>& provenance = {});

}  // namespace attn
