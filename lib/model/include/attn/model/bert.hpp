// attn/model/bert.hpp: a BERT encoder (all-MiniLM-L6-v2 and its kin) built from attn's pieces.
//
//   ids (B, T)                       [CLS] pieces [SEP] [PAD]...; row b has len[b] real tokens
//   x = LN(word[ids] + pos[t] + type[0])                  (B, T, D)
//   6 x:  a = MultiHeadAttention(x, key padding len)      (B, T, D)  weights (B, H, T, T) recorded
//         x = LN(x + a)                                   post-norm, as BERT
//         f = W2 gelu(W1 x + b1) + b2                     (B, T, I) -> (B, T, D), erf GELU
//         x = LN(x + f)
//   sentence = normalize(mean over t < len[b] of x[b, t]) (B, D)  sentence-transformers pooling
//
// The weights live in attn::MultiHeadAttention (attn::Linear for Q, K, V, O)
// and attn::Linear. The forward pass runs the whole padded batch through each
// projection as one GEMM, with the weights pre-transposed once (W^T, [in, out],
// Q, K and V fused) so Eigen packs them without a transpose; the attention
// itself is attention_reference with attn::Mask::key_padding and fill -inf.
// GEMMs are split into fixed 128-column blocks that threads share, so the
// numbers are the same for any thread count.
// Weight names follow Hugging Face's BertModel state dict (optionally prefixed "bert.").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "attn/core/mask.hpp"
#include "attn/nn/mha.hpp"
#include "attn/core/tensor.hpp"
#include "attn/model/tokenizer.hpp"

namespace attn {

struct BertConfig {
    int64_t vocab_size = 30522, hidden = 384, layers = 6, heads = 12, intermediate = 1536;
    int64_t max_position = 512, type_vocab = 2;
    float layer_norm_eps = 1e-12f;
    int64_t max_len = 256;  // tokenizer truncation: sentence-transformers' max_seq_length, else max_position
};

// The files of a model folder, each checked to exist.
struct ModelFiles {
    std::string dir, config, vocab, weights, st_config;  // st_config may be "" (optional)
};
// The folder `attn model` reads by default: $ATTN_MODEL_DIR, else
// data/models/all-MiniLM-L6-v2 under the working directory, else next to the
// executable's parent (build/..). Returns the first that exists, or the
// working-directory one.
std::string default_model_dir();
// Throws InputError naming the missing file and the fetch command.
ModelFiles locate_model(const std::string& dir);
// config.json (+ sentence_bert_config.json's max_seq_length). InputError naming the file.
// Ranges are checked: sizes positive, hidden_size a multiple of the heads,
// 0 < layer_norm_eps < 1 as a float.
BertConfig read_bert_config(const ModelFiles& files);
// vocab.txt as a tokenizer truncating to config.max_len; InputError naming vocab.txt
// if its line count is not the config's vocab_size.
WordPieceTokenizer load_tokenizer(const ModelFiles& files, const BertConfig& config);

struct BertLayer {
    MultiHeadAttention attention{MhaConfig{}};
    Tensor ln1_gamma, ln1_beta;  // (D) after attention
    Linear ffn_in;               // W (I, D)
    Linear ffn_out;              // W (D, I)
    Tensor ln2_gamma, ln2_beta;  // (D) after the feed-forward
    // Pre-transposed copies for the fast path, made by BertModel::prepare():
    Tensor qkv_t, qkv_b;  // (D, 3D) = [W_q; W_k; W_v]^T, (3D)
    Tensor o_t;           // (D, D)  = W_o^T
    Tensor ffn_in_t;      // (D, I)
    Tensor ffn_out_t;     // (I, D)
};

struct BertOptions {
    bool record_attention = true;  // keep every layer's weights
    bool key_padding_mask = true;  // false: padded keys get weight too (the bug lesson)
    bool record_qkv = false;       // keep every layer's per-head Q, K, V (B, H, T, Dk), the attention's inputs
    int threads = 1;               // sentences in parallel; same numbers for any value
};

struct BertOutput {
    std::vector<int64_t> lengths;     // real tokens per row
    Tensor hidden;                    // (B, T, D) last layer
    std::vector<Tensor> attentions;   // per layer (B, H, T, T), if recorded
    std::vector<Tensor> queries, keys, values;  // per layer (B, H, T, Dk), if record_qkv
    Tensor sentence;                  // (B, D) mean-pooled over real tokens, L2-normalised
    Mask mask;                        // the key-padding mask used (or none)
};

class BertModel {
public:
    BertConfig config;
    Tensor word_emb, pos_emb, type_emb;  // (V, D), (P, D), (2, D)
    Tensor emb_ln_gamma, emb_ln_beta;    // (D)
    std::vector<BertLayer> layers;
    // The files load() read (empty for random()): messages about token ids name the vocabulary.
    ModelFiles files;

    // model.safetensors + config.json of a folder. InputError names the file (and
    // the tensor: a missing one, a wrong shape, a NaN or infinite value).
    static BertModel load(const ModelFiles& files);
    // Same architecture, BERT's initialisation: every weight N(0, 0.02^2), biases 0,
    // LayerNorm gamma 1 beta 0. Deterministic for a seed.
    static BertModel random(const BertConfig& cfg, uint64_t seed);

    // ids: one token-id list per sentence (each starting [CLS], ending [SEP]),
    // padded with [PAD] (id pad_id) to the longest. InputError on an empty batch,
    // an empty sentence, an id outside the vocabulary, or a sentence longer than
    // the position table.
    BertOutput forward(const std::vector<std::vector<int32_t>>& ids, const BertOptions& opt = {},
                       int32_t pad_id = 0) const;

    // Rebuilds the pre-transposed copies from the Linear weights (load() and
    // random() call it; call it again after changing a weight by hand).
    void prepare();
};

// ---- finding a word among the tokens (attn/model/heads.hpp reads the weights)

// Token positions of the occurrence-th (1-based) occurrence of `word` among the
// basic words of an encoding (several positions when WordPiece split it).
// `word` must be one basic word after normalisation ("It" finds "it"), or a
// special token typed in the text ("[MASK]").
// Throws InputError when it is not one word or not in the text that often.
std::vector<int64_t> find_word(const Encoding& enc, const std::string& word, int occurrence);

// In place over rows of x (rows, d): (x - mean) / sqrt(var + eps) * gamma + beta.
void layer_norm_rows(float* x, const float* gamma, const float* beta, int64_t rows, int64_t d, float eps);
// out (N, n_out) = x (N, n_in) . Wt (n_in, n_out) + b (n_out), b may be null.
// Wt is a transposed nn.Linear weight. Fixed 128-column blocks are spread over
// `threads`: every output element is computed the same way for any thread count.
void gemm_wt(float* out, const float* x, const float* Wt, const float* b, int64_t N, int64_t n_in, int64_t n_out,
             int threads);

// In place: x * 0.5 * (1 + erf(x / sqrt 2)), the exact (erf) GELU.
void gelu_erf(float* x, int64_t n);

}  // namespace attn
