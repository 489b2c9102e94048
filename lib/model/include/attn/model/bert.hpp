// attn/model/bert.hpp: a BERT encoder (all-MiniLM-L6-v2 and any BERT-family folder of the same
// format: every size from config.json) built from attn's pieces.
//
//   ids (B, T)                       [CLS] pieces [SEP] [PAD]...; row b has len[b] real tokens
//   x = LN(word[ids] + pos[t] + type[0])                  (B, T, D)
//   L x:  a = MultiHeadAttention(x, key padding len)      (B, T, D)  weights (B, H, T, T) recorded
//         x = LN(x + a)                                   post-norm, as BERT
//         f = W2 gelu(W1 x + b1) + b2                     (B, T, I) -> (B, T, D), erf GELU
//         x = LN(x + f)
//   sentence = normalize(mean over t < len[b] of x[b, t]) (B, D)  sentence-transformers pooling
//              (or x[b, 0], the [CLS] vector; normalize only with a Normalize module)
//
// The model is a configuration of lib/nn's Transformer stack (attn/nn/stack.hpp: post-norm,
// token types, an embedding LayerNorm, the erf GELU, no causal mask, no head): load() reads a
// folder into one, forward() runs the stack's batched path (TransformerStack::forward_batch:
// packed GEMMs, the flash kernel when no weights are recorded, skip-padding, bf16 weights) and
// pools its hidden states into sentence vectors.
// Weight names follow Hugging Face's BertModel state dict (optionally prefixed "bert.").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "attn/core/tensor.hpp"
#include "attn/nn/stack.hpp"
#include "attn/model/tokenizer.hpp"

namespace attn {

// How BertOutput::sentence is made from the last hidden state: sentence-transformers' Pooling
// module (the mean over the real tokens, or the [CLS] token's vector), then its Normalize
// module (L2) if the folder's modules.json lists one.
enum class BertPooling { Mean, Cls };

// The defaults are all-MiniLM-L6-v2's; read_bert_config fills every field from the folder.
struct BertConfig {
    int64_t vocab_size = 30522, hidden = 384, layers = 6, heads = 12, intermediate = 1536;
    int64_t max_position = 512, type_vocab = 2;
    float layer_norm_eps = 1e-12f;
    int64_t max_len = 256;  // tokenizer truncation: sentence-transformers' max_seq_length, else max_position
    BertCasing casing;      // tokenizer_config.json's do_lower_case and strip_accents (uncased when absent)
    BertPooling pooling = BertPooling::Mean;
    bool normalize = true;  // L2-normalise the sentence vector
};

// The files of a model folder, each checked to exist. The optional ones are "" when absent.
struct ModelFiles {
    std::string dir, config, weights, st_config;
    std::string vocab;             // vocab.txt; "" when the folder has tokenizer.json alone (transformers 5 saves so)
    std::string tokenizer_json;    // tokenizer.json: the WordPiece vocabulary and the normaliser's settings
    std::string tokenizer_config;  // tokenizer_config.json: the casing
    std::string pooling;           // 1_Pooling/config.json, or pooling_config.json beside config.json (fetch-model.sh)
    std::string modules;           // modules.json: is there a Normalize module
};
// The folder `attn model` reads by default: $ATTN_MODEL_DIR, else
// data/models/all-MiniLM-L6-v2 under the working directory, else next to the
// executable's parent (build/..). Returns the first that exists, or the
// working-directory one.
std::string default_model_dir();
// Throws InputError naming the missing file and what writes it (save_pretrained for a user's folder,
// `attn model fetch` for the default one). The tokenizer is vocab.txt or tokenizer.json, either.
ModelFiles locate_model(const std::string& dir);
// The model's name for titles and dumps: the folder's last component ("all-MiniLM-L6-v2").
std::string model_name(const ModelFiles& files);
// config.json (+ sentence_bert_config.json's max_seq_length, tokenizer_config.json's casing,
// the pooling files). InputError naming the file and the rule. Ranges are checked: sizes
// positive, hidden_size a multiple of the heads, 0 < layer_norm_eps < 1 as a float. What
// this encoder does not implement is refused by name: a model_type other than "bert", a
// hidden_act other than "gelu" (the erf form), a position_embedding_type other than
// "absolute", is_decoder or add_cross_attention true, tokenize_chinese_chars false, a
// pooling other than the mean or [CLS].
BertConfig read_bert_config(const ModelFiles& files);
// vocab.txt as a tokenizer truncating to config.max_len; InputError naming vocab.txt
// if its line count is not the config's vocab_size.
WordPieceTokenizer load_tokenizer(const ModelFiles& files, const BertConfig& config);

// BERT's forward options are the stack's batch options (attn/nn/stack.hpp): which GEMM and
// attention kernel, the key-padding mask, skip_padding, bf16 weights, threads, what to record.
using BertOptions = BatchOptions;

struct BertOutput : BatchOutput {
    Tensor sentence;  // (B, D) pooled as config.pooling says (MiniLM: the mean over real tokens), L2-normalised if
                      // config.normalize
};

// The stack a BERT of this config is: post-norm, type_vocab token types, the erf GELU, no mask
// but key padding, no head.
StackConfig bert_stack_config(const BertConfig& c);

class BertModel {
public:
    BertConfig config;
    // The weights: stack.tok_emb, pos_emb, type_emb (word, position and token-type embeddings),
    // emb_ln_*, and per layer attention (q, k, v, o), ln1 (after the attention), fc and proj
    // (intermediate and output dense), ln2 (after the feed-forward).
    TransformerStack stack;
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

    // The stack's prepared copies (load() and random() call prepare(); call it again after
    // changing a weight by hand); prepare_bf16() for BertOptions::bf16_weights.
    void prepare() { stack.prepare(); }
    void prepare_bf16() { stack.prepare_bf16(); }
    bool bf16_prepared() const { return stack.bf16_prepared(); }

    // The attention backend forward() runs for these options (Reference when
    // recording the weights or asked to, else Flash).
    static Backend attention_backend(const BertOptions& opt) { return TransformerStack::batch_backend(opt); }
};

// ---- finding a word among the tokens (attn/model/heads.hpp reads the weights)

// Token positions of the occurrence-th (1-based) occurrence of `word` among the
// basic words of an encoding (several positions when WordPiece split it).
// `word` must be one basic word after normalisation ("It" finds "it"), or a
// special token typed in the text ("[MASK]").
// Throws InputError when it is not one word or not in the text that often.
std::vector<int64_t> find_word(const Encoding& enc, const std::string& word, int occurrence);

// The GEMM forward() runs for these options: "amx-bf16", "avx512-bf16", "<family>-widened-bf16", "avx512", "avx2",
// "neon" or "eigen". InputError when opt.gemm forces a kernel this CPU does not run (under ATTN_ISA).
std::string bert_gemm_path(const BertOptions& opt);  // gemm_kernel_name() of attn/nn/packed_linear.hpp

}  // namespace attn
