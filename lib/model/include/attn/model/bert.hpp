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
// The weights live in attn::MultiHeadAttention (attn::Linear for Q, K, V, O)
// and attn::Linear. The forward pass runs the whole padded batch through each
// projection as one GEMM, with the weights pre-transposed once (W^T, [in, out],
// Q, K and V fused) and also packed in 32-column strips for attn/cpu/gemm.hpp's kernels
// (gemm_packed: the widest the CPU has under ATTN_ISA, or one forced with BertOptions::gemm;
// Eigen's gemm_wt where the CPU has no SIMD family or with BertGemm::Eigen), and
// the GELU applied to each block of the intermediate GEMM as it is produced. The
// attention is attn::Mask::key_padding with fill -inf on one of two backends
// (attn/nn/backend.hpp): attention_reference when the weights are recorded
// (attn model attention, entropy, probe), else the tiled flash kernel, which
// never forms the (B, H, T, T) weights and spreads (batch, head, query block)
// over the threads. GEMMs are split into fixed 128-column blocks and the
// element-wise passes into fixed pieces of rows that threads share, so the
// numbers are the same for any thread count.
// Weight names follow Hugging Face's BertModel state dict (optionally prefixed "bert.").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "attn/core/mask.hpp"
#include "attn/nn/backend.hpp"
#include "attn/nn/mha.hpp"
#include "attn/core/tensor.hpp"
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
    std::string dir, config, vocab, weights, st_config;
    std::string tokenizer_config;  // tokenizer_config.json: the casing
    std::string pooling;           // 1_Pooling/config.json, or pooling_config.json beside config.json (fetch-model.sh)
    std::string modules;           // modules.json: is there a Normalize module
};
// The folder `attn model` reads by default: $ATTN_MODEL_DIR, else
// data/models/all-MiniLM-L6-v2 under the working directory, else next to the
// executable's parent (build/..). Returns the first that exists, or the
// working-directory one.
std::string default_model_dir();
// Throws InputError naming the missing file and the fetch command.
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

// A transposed nn.Linear weight Wt (n_in, n_out) laid out for the packed GEMM (AVX-512 or
// AVX2, attn/cpu/gemm.hpp): strips of 32 columns, each (n_in, 32) contiguous, zero-padded
// past n_out. Empty (strips has no data) where the CPU has neither: gemm_packed then says false.
struct PackedWeight {
    Tensor strips;  // (ceil(n_out / 32), n_in, 32)
    int64_t n_in = 0, n_out = 0;
    static PackedWeight pack(const Tensor& Wt);  // Wt (n_in, n_out)
};

// The same weight rounded to bfloat16 (nearest even) for the bf16 GEMM (BertOptions::
// bf16_weights): strips of 32 columns, each (kp, 32) pairs of bf16 (k padded to 32), the
// pair p of column c holding rows 2p and 2p + 1 (zero past n_in and n_out). Made by
// BertModel::prepare_bf16(); empty until then.
struct PackedWeightBf16 {
    std::vector<uint32_t> pairs;  // (ceil(n_out / 32), kp, 32); kp = ceil(n_in / 32) * 16
    int64_t n_in = 0, n_out = 0, kp = 0;
    static PackedWeightBf16 pack(const Tensor& Wt);  // Wt (n_in, n_out)
};

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
    PackedWeight qkv_p, o_p, ffn_in_p, ffn_out_p;  // the same, packed in strips (gemm_packed)
    PackedWeightBf16 qkv_h, o_h, ffn_in_h, ffn_out_h;  // rounded to bf16 (prepare_bf16)
};

// Which attention kernel a forward without recording runs: Auto is the flash
// kernel (the reference whenever the weights are recorded); Reference forces
// attention_reference (the readable path the flash one is tested against).
enum class BertAttention { Auto, Reference };

// The float32 projections' GEMM: Best, the widest packed kernel this CPU runs under ATTN_ISA
// (AVX-512, else AVX2, else NEON on AArch64; else Eigen's gemm_wt, faster than the plain C++
// kernel on a CPU without those); Avx512, Avx2, Neon or
// Generic that kernel (forward() throws InputError where it does not run here, rather than
// quietly running another); Eigen, gemm_wt, the readable path the others are tested against.
enum class BertGemm { Best, Avx512, Avx2, Neon, Generic, Eigen };
// "best", "avx512", "avx2", "neon", "generic", "eigen"
const char* bert_gemm_name(BertGemm g);

struct BertOptions {
    bool record_attention = true;  // keep every layer's weights (runs attention_reference)
    BertAttention attention = BertAttention::Auto;
    BertGemm gemm = BertGemm::Best;  // the float32 projections' GEMM (BertGemm)
    bool key_padding_mask = true;  // false: padded keys get weight too (the bug lesson)
    bool record_qkv = false;       // keep every layer's per-head Q, K, V (B, H, T, Dk), the attention's inputs
    // true: the projections, LayerNorms and feed-forward run over the real tokens only
    // (padded rows cost nothing; BertOutput::hidden is zero there). The sentence embeddings
    // and the real rows of hidden are the same numbers as without it (with the packed GEMM:
    // bit for bit). Ignored when recording weights or q, k, v, which need every row, and
    // without the key-padding mask, where padded keys take part.
    bool skip_padding = false;
    // true: the four projections per layer take bfloat16 weights and inputs (rounded to
    // nearest even; products summed in float32, bias, GELU, LayerNorm, attention and
    // residuals stay float32), on AMX tiles, AVX-512 BF16, or the widest float32 family with
    // the pairs widened to float32. Needs prepare_bf16() first and gemm_bf16_available(); InputError otherwise. The error against float32
    // is the user's to measure: attn model bench --weights bf16 reports it.
    bool bf16_weights = false;
    bool amx = true;  // with bf16_weights: AMX tiles where usable; false: AVX-512 BF16 (tests compare them)
    int threads = 1;               // GEMM column blocks, (batch, head) pairs, rows; same numbers for any value
                                   // (at most one thread per 32 token rows: fewer cost more than they save)
};

struct BertOutput {
    std::vector<int64_t> lengths;     // real tokens per row
    Tensor hidden;                    // (B, T, D) last layer
    std::vector<Tensor> attentions;   // per layer (B, H, T, T), if recorded
    std::vector<Tensor> queries, keys, values;  // per layer (B, H, T, Dk), if record_qkv
    Tensor sentence;                  // (B, D) pooled as config.pooling says (MiniLM: the mean over real tokens), L2-normalised if config.normalize
    Mask mask;                        // the key-padding mask used (or none)
    std::string attention_path;       // the backend the attention ran on: "reference" or "flash"
    std::string gemm_path;            // the projections' GEMM: "avx512", "avx2" or "neon" (gemm_packed), "eigen" (gemm_wt), "amx-bf16", "avx512-bf16" or "<family>-widened-bf16" (avx512, avx2, neon, generic)
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
    // Rounds the projection weights to bf16 for BertOptions::bf16_weights (about half the
    // bytes of the float32 ones again). Call after prepare(); idempotent.
    void prepare_bf16();
    bool bf16_prepared() const;

    // The attention backend forward() runs for these options (Reference when
    // recording the weights or asked to, else Flash).
    static Backend attention_backend(const BertOptions& opt);
};

// ---- finding a word among the tokens (attn/model/heads.hpp reads the weights)

// Token positions of the occurrence-th (1-based) occurrence of `word` among the
// basic words of an encoding (several positions when WordPiece split it).
// `word` must be one basic word after normalisation ("It" finds "it"), or a
// special token typed in the text ("[MASK]").
// Throws InputError when it is not one word or not in the text that often.
std::vector<int64_t> find_word(const Encoding& enc, const std::string& word, int occurrence);

// out (N, n_out) = x (N, n_in) . Wt (n_in, n_out) + b (n_out), b may be null.
// Wt is a transposed nn.Linear weight. Fixed 128-column blocks are spread over
// `threads`: every output element is computed the same way for any thread count.
// gelu: then the erf GELU of lib/nn (nn::gelu_erf_forward_fast) on each block, in place (the
// same numbers as a separate pass).
void gemm_wt(float* out, const float* x, const float* Wt, const float* b, int64_t N, int64_t n_in, int64_t n_out,
             int threads, bool gelu = false);

// gemm_wt with the weight packed (PackedWeight): a kernel of attn/cpu/gemm.hpp (which: Best,
// the widest this CPU runs under ATTN_ISA), each element summed as b + x(i,0) Wt(0,j) +
// x(i,1) Wt(1,j) + ... in ascending k, so the same for any thread count and any split of the
// work; the AVX-512, AVX2 and NEON kernels use fused multiply-adds and agree bit for bit, the
// generic one multiplies then adds. Returns false (and computes nothing) where that kernel
// does not run here, for BertGemm::Eigen, or when w is empty.
bool gemm_packed(float* out, const float* x, const PackedWeight& w, const float* b, int64_t N, int threads,
                 bool gelu = false, BertGemm which = BertGemm::Best);
// True when gemm_packed runs here with that choice (Best: the CPU has AVX-512, AVX2 or NEON).
bool gemm_packed_available(BertGemm which = BertGemm::Best);
// True when the bf16 GEMM (BertOptions::bf16_weights) runs here: on every CPU (AMX tiles or
// AVX-512 BF16's vdpbf16ps where the CPU has them, else the same pairs widened by shifts, two
// FMAs each, on the widest float32 family: AVX-512, AVX2, NEON or generic).
bool gemm_bf16_available();
// out (N, n_out) = bf16(x) . w + b for w = PackedWeightBf16::pack(Wt): x rounded to bf16
// (nearest even), products of bf16 pairs summed in float32, then the bias (and with gelu,
// the GELU). amx: on AMX tiles where cpu_amx_bf16_usable(), else (or false) AVX-512 BF16,
// else the widest float32 family with the pairs widened.
// The same numbers for any thread count. Returns false, computing nothing, where w is empty. scratch (optional): the bf16 copy of x, reused.
bool gemm_bf16(float* out, const float* x, const PackedWeightBf16& w, const float* b, int64_t N, int threads,
               bool gelu = false, bool amx = true, std::vector<uint16_t>* scratch = nullptr);
// The GEMM forward() runs for these options: "amx-bf16", "avx512-bf16", "<family>-widened-bf16", "avx512", "avx2",
// "neon" or "eigen". InputError when opt.gemm forces a kernel this CPU does not run (under ATTN_ISA).
std::string bert_gemm_path(const BertOptions& opt);

}  // namespace attn
