// attn/nn/stack.hpp: the Transformer stack. GPT-2 (attn/model/gpt2.hpp), BERT
// (attn/model/bert.hpp), the model attn trains (TrainableStack, attn/nn/trainable_stack.hpp, whose
// weights are a stack and whose training path is src/stack_engine.hpp) and the KV-cache
// lesson's decoder (CausalDecoder, attn/nn/kv_cache.hpp) are configurations of it; lib/model
// only reads their folders into one.
//
//   ids (B, T)
//   x = tok_emb[ids] + pos_emb[t] (+ type_emb[0] when token_types > 0)      (B, T, D)
//   Post-norm only: x = LN_emb(x)
//   L blocks:
//     Pre-norm (GPT-2, attn train):            Post-norm (BERT):
//       x = x + MHA(LN_1(x))                      x = LN_1(x + MHA(x))
//       x = x + W_2 act(W_1 LN_2(x) + b_1) + b_2  x = LN_2(x + W_2 act(W_1 x + b_1) + b_2)
//     (mlp = false: attention-only blocks, no LN_2 and no MLP)
//     MHA: q, k, v, o as nn.MultiheadAttention (attn::MultiHeadAttention's Linear weights),
//     the causal mask for a decoder, key padding for a padded batch
//   Pre-norm only: x = LN_f(x)
//   logits = x head^T (head: its own (V, D) weight, or tok_emb when tied)         (B, T, V)
// No norm (the KV-cache lesson's blocks): x = x + MHA(x); x = x + W_2 act(W_1 x + b_1) + b_2.
// Without a vocabulary (vocab 0) the stack has no embeddings and no head and runs on vectors
// x (B, T, D) given to forward_vectors() and step_vector().
//
// Two ways to run it:
//   forward()        one sequence, every step written out on the reference ops so that each
//                    activation can be recorded under TransformerLens's hook names and a head's
//                    output replaced (ablation); step() the same for one token with a KV cache
//   forward_batch()  a padded batch, fast: the four projections per layer as GEMMs on weights
//                    prepared once (transposed, Q K V fused, packed in strips or rounded to bf16,
//                    attn/nn/packed_linear.hpp), the activation fused into the MLP's first GEMM,
//                    the flash kernel when no weights are recorded, optionally the per-token work
//                    over the real tokens only. Checked against forward() in tests/test_nn_stack.cpp.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "attn/core/linear.hpp"
#include "attn/core/mask.hpp"
#include "attn/core/tensor.hpp"
#include "attn/nn/backend.hpp"
#include "attn/nn/mha.hpp"
#include "attn/nn/packed_linear.hpp"

namespace attn {

class KvCache;  // attn/nn/kv_store.hpp

enum class NormPlace { Pre, Post, None };
const char* norm_place_name(NormPlace n);  // "pre", "post", "none"

struct StackConfig {
    int64_t vocab = 0;      // V: rows of tok_emb (and of the head); 0: no embeddings, no head (vectors in)
    int64_t positions = 0;  // rows of pos_emb: the longest sequence (0 with vocab 0)
    int64_t d_model = 0;    // D
    int64_t heads = 1;      // H
    int64_t d_k = 0;        // per head; 0: D / H
    int64_t d_v = 0;        // 0: d_k
    int64_t layers = 0;
    int64_t d_ff = 0;          // the MLP's width; 0: 4 D
    int64_t token_types = 0;   // rows of type_emb; 0: none (BERT: 2, every token type 0)
    bool causal = true;        // decoder; false: every token sees every (real) token
    NormPlace norm = NormPlace::Pre;
    bool mlp = true;           // false: attention-only blocks
    MlpActivation act = MlpActivation::GeluTanh;
    float eps = 1e-5f;         // every LayerNorm's
    bool scale = true;         // scores / sqrt(d_k); false: q . k as they are
    bool bias = true;          // the projections' and the MLP's biases (false: none)
    bool lm_head = true;       // logits from the head; false (an encoder): the hidden states only
    bool tied_head = true;     // the head is tok_emb (GPT-2); false: its own weight
    // d_k, d_v, d_ff filled in; InputError naming the field for a size out of range.
    StackConfig resolved() const;
    // The scores' options every forward of the stack uses: 1/sqrt(d_k) or no scale as `scale`
    // says, masked scores -inf, no dropout (inference).
    AttentionOptions attention_options() const;
};

// One block's weights. Pre-norm: LN_1 before the attention, LN_2 before the MLP. Post-norm:
// LN_1 after the attention's residual add, LN_2 after the MLP's. No norm: no LN_1, no LN_2.
struct StackLayer {
    Tensor ln1_gamma, ln1_beta;                 // (D)
    MultiHeadAttention attention{MhaConfig{}};  // q, k, v (H d_k, D), (H d_v, D); o (D, H d_v); biases
    Tensor ln2_gamma, ln2_beta;                 // (D); empty when mlp = false or no norm
    Linear fc;                                  // W (F, D), b (F)
    Linear proj;                                // W (D, F), b (D)
};

// Every activation of forward(), by TransformerLens's hook names, in the order made.
struct ActivationCache {
    std::vector<std::string> order;
    std::map<std::string, Tensor> tensors;
    const Tensor& at(const std::string& name) const;  // InputError naming the tensor when absent
    void put(const std::string& name, Tensor t);
};

// One head: layer l, head h (0-based).
struct HeadRef {
    int64_t layer = 0, head = 0;
    bool operator==(const HeadRef& o) const { return layer == o.layer && head == o.head; }
};
// What replaces an ablated head's z (1, H, T, Dv) slice before the output projection:
//   zero  z[h] = 0 at every position: the head adds nothing (o_proj's bias stays)
//   mean  z[h][t] = the mean of z[h] over the T positions of this text
enum class AblationMode { Zero, Mean };
const char* ablation_mode_name(AblationMode m);  // "zero", "mean"

struct StackOptions {
    bool record_attention = true;   // keep every layer's weights (1, H, T, T)
    bool record_residual = false;   // the residual stream before each block and after the last
    ActivationCache* cache = nullptr;  // every activation (cache_names()); off, nothing is copied
    std::vector<HeadRef> ablate{};  // heads whose z is replaced as `ablation` says, in one pass
    AblationMode ablation = AblationMode::Zero;
};

struct StackOutput {
    Tensor hidden;                   // (B, T, D): the last block's output (after LN_f when pre-norm)
    Tensor logits;                   // (T, V) when config.lm_head (forward of ids)
    std::vector<Tensor> attentions;  // per layer (B, H, T, T), if recorded
    std::vector<Tensor> residual;    // L + 1 of (B, T, D): before block 0 .. after block L-1
};

// forward_batch's attention: Auto is the flash kernel (the reference whenever the weights are
// recorded); Reference forces attention_reference.
enum class BatchAttention { Auto, Reference };

struct BatchOptions {
    bool record_attention = true;  // keep every layer's weights (runs attention_reference)
    BatchAttention attention = BatchAttention::Auto;
    GemmChoice gemm = GemmChoice::Best;  // the float32 projections' GEMM
    bool key_padding_mask = true;  // false: padded keys get weight too (the bug lesson)
    bool record_qkv = false;       // keep every layer's per-head Q, K, V (B, H, T, Dk)
    // true: the projections, LayerNorms and MLP run over the real tokens only (padded rows
    // cost nothing; hidden is zero there). The real rows are the same numbers as without it
    // (with a packed GEMM: bit for bit). Ignored when recording weights or q, k, v, which need
    // every row, and without the key-padding mask, where padded keys take part.
    bool skip_padding = false;
    // true: the four projections per layer take bfloat16 weights and inputs (rounded to
    // nearest even; float32 sums; bias, activation, LayerNorm, attention and residuals stay
    // float32). Needs prepare_bf16() first; InputError otherwise.
    bool bf16_weights = false;
    bool amx = true;  // with bf16_weights: AMX tiles where usable; false: AVX-512 BF16
    int threads = 1;  // same numbers for any value (at most one thread per 32 token rows)
};

struct BatchOutput {
    std::vector<int64_t> lengths;               // real tokens per row
    Tensor hidden;                              // (B, T, D): the last block's output (after LN_f when pre-norm)
    std::vector<Tensor> attentions;             // per layer (B, H, T, T), if recorded
    std::vector<Tensor> queries, keys, values;  // per layer (B, H, T, Dk), if record_qkv
    Mask mask;                                  // the mask used (key padding, causal, both or none)
    std::string attention_path;                 // "reference" or "flash"
    std::string gemm_path;                      // gemm_kernel_name(): avx512, avx2, neon, eigen, amx-bf16, ...
};

// The weights forward_batch reads, made from the Linear weights by prepare(): per layer the
// transposes (Q, K, V side by side), their strips, and (prepare_bf16) their bf16 pairs.
struct PreparedLayer {
    Tensor qkv_t, qkv_b;  // (D, H (2 Dk + Dv)) = [W_q; W_k; W_v]^T, (H (2 Dk + Dv))
    Tensor o_t;           // (H Dv, D) = W_o^T
    Tensor fc_t;          // (D, F)
    Tensor proj_t;        // (F, D)
    PackedWeight qkv_p, o_p, fc_p, proj_p;
    PackedWeightBf16 qkv_h, o_h, fc_h, proj_h;
};

class TransformerStack {
public:
    StackConfig config;  // resolved
    Tensor tok_emb;      // (V, D)
    Tensor pos_emb;      // (positions, D)
    Tensor type_emb;     // (token_types, D); empty when token_types = 0
    Tensor emb_ln_gamma, emb_ln_beta;  // (D), post-norm only
    std::vector<StackLayer> layers;
    Tensor lnf_gamma, lnf_beta;  // (D), pre-norm only
    Tensor lm_head;              // (V, D) when lm_head and not tied_head
    std::vector<PreparedLayer> prepared;  // forward_batch's copies (prepare())

    TransformerStack() = default;  // no layers, no weights: a model not loaded yet
    // Zero weights of the config's shapes (LayerNorm gammas 1). InputError on a bad config.
    explicit TransformerStack(const StackConfig& cfg);
    // Throws InputError naming the tensor whose shape does not fit the config (`who` first).
    void check_shapes(const std::string& who) const;

    const Tensor& head() const { return config.tied_head ? tok_emb : lm_head; }
    int64_t d_k() const { return config.d_k; }

    // One sequence on the reference ops. InputError on no ids, more than `positions`, an id
    // outside [0, vocab) (the message names `vocab_name`), or an ablated head outside the
    // model (or named twice).
    StackOutput forward(const std::vector<int32_t>& ids, const StackOptions& opt = {},
                        const std::string& vocab_name = "the model") const;
    // The names forward() records with a cache, in order.
    std::vector<std::string> cache_names() const;
    // The blocks (and LN_f) alone on vectors x (B, T, D): the stack's mask (causal or none),
    // `options` the scores' options (null: the config's scale). The same records as forward()
    // but the embeddings' and the logits. ShapeError for x of another width.
    StackOutput forward_vectors(const Tensor& x, const StackOptions& opt = {},
                                const AttentionOptions* options = nullptr) const;

    // An empty KV cache (batch 1) and one token at the position after those in it (a causal
    // stack): its keys and values appended to every layer, its logits (V) returned (with
    // lm_head; else its hidden state (D)). attentions, if given: each layer's weights of this
    // query over the cached keys (1, H, 1, Tk). The same numbers as forward() to float32 rounding.
    KvCache make_cache(int64_t batch = 1) const;
    Tensor step(int32_t id, KvCache& cache, std::vector<Tensor>* attentions = nullptr,
                const std::string& vocab_name = "the model") const;
    // The blocks (and LN_f) alone on one token's vectors x_t (B, 1, D) against the cache -> (B, 1, D).
    // layer_out: each block's output (B, 1, D); trace: the steps with their shapes (the
    // cache's K and V growing); attentions as step(). ShapeError for another shape or a cache
    // of other layers.
    Tensor step_vector(const Tensor& x_t, KvCache& cache, std::vector<Tensor>* attentions = nullptr,
                       std::vector<Tensor>* layer_out = nullptr, const TraceFn* trace = nullptr,
                       const AttentionOptions* options = nullptr) const;

    // A padded batch: ids one list per row (padded with pad_id to the longest). InputError on
    // an empty batch or row, an id outside the vocabulary, a row longer than `positions`, a
    // forced GEMM this CPU lacks, or bf16 weights not prepared.
    BatchOutput forward_batch(const std::vector<std::vector<int32_t>>& ids, const BatchOptions& opt = {},
                              int32_t pad_id = 0, const std::string& vocab_name = "the model") const;
    // Rebuilds `prepared` from the Linear weights (call after changing a weight by hand).
    void prepare();
    // The projections rounded to bf16 for BatchOptions::bf16_weights. After prepare(); idempotent.
    void prepare_bf16();
    bool bf16_prepared() const;
    // The attention backend forward_batch runs for these options.
    static Backend batch_backend(const BatchOptions& opt);
};

}  // namespace attn
