// The source claims C1..C44 in the English of the project's claim summary
// (shared/reference/CLAIMS.md), for `--quote`: a verdict can print the claim it
// judges beside the numbers. Kept in step with that file by hand; a test checks
// that every id a lesson cites has a text here.
#include "lesson.hpp"

#include <array>

namespace attn::lessons {

namespace {
constexpr std::array<const char*, 44> kClaims{{
    "An RNN squeezes the whole prefix into one fixed-size hidden state; information about far tokens is diluted step by step (errors concentrate on long sentences, > ~40 tokens).",  // C1
    "An RNN is sequential; attention turns sequence modelling into matrix products that run in parallel over all positions.",  // C2
    "Attention is a soft lookup: query = the question, key = the label, value = the content; every value contributes, weighted by softmax of query-key match.",  // C3
    "Any two tokens interact directly whatever their distance (A2 §1).",  // C4
    "Q = x W_q, K = x W_k, V = x W_v; x is [batch, seq_len, d_model]; Q, K are [.., d_k], V [.., d_v].",  // C5
    "d_k must match between Q and K (dot product); d_v is independent of d_k and may differ.",  // C6
    "nn.Linear stores W as [out_features, in_features] and computes x W^T + b.",  // C7
    "Q/K/V projections usually keep their bias; whether to drop it is habit, not math.",  // C8
    "Init with Xavier or Kaiming; never all-zero (symmetric, no learning); init each head independently (A2 §2.1).",  // C9
    "A2 §2.2: with long sequences you may lower d_k to save compute, \"but not below 64\".",  // C10
    "q·k = |q||k|cosθ: direction similarity, but vector length inflates the score too.",  // C11
    "softmax([0, 3]) ≈ [0.047, 0.953]; softmax([0, 30]) ≈ [0, 1] (the other weight is negligible).",  // C12
    "When softmax is near one-hot its gradient is tiny; early in training attention \"locks\" onto one position and cannot recover.",  // C13
    "With q_i, k_i independent, mean 0, variance 1: q·k has mean 0 and variance d_k, std √d_k.",  // C14
    "The table: d_k = 1, 16, 64, 512 → std ≈ 1, 4, 8, 22.6; typical range ≈ ±3σ: [-3,3], [-12,12], [-24,24], [-68,68].",  // C15
    "exp(24) ≈ 2.6e10 vs exp(0) = 1: unscaled scores at d_k=64 make softmax near one-hot.",  // C16
    "Dividing by √d_k brings the score variance back to ~1 whatever d_k (like a normalisation).",  // C17
    "A2: removing the scaling made the model almost untrainable; weights were all ~1 or ~0.",  // C18
    "Cosine similarity bounds scores in [-1, 1] but throws away vector length, which can carry meaning (strong vs weak tokens).",  // C19
    "Replacing √d_k with a fixed constant (e.g. divide by 10) trained slightly worse.",  // C20
    "Naive single head: batch 2, seq 6, d_model 16, d_k 16; shapes Q,K,V [2,6,16], scores [2,6,6], weights [2,6,6], out [2,6,16].",  // C21
    "Scores need K transposed on its last two dims: Q K^T, not K Q^T, not Q K.",  // C22
    "Padding mask: padded keys must get no weight; mask shape broadcasts as [batch, 1, seq].",  // C23
    "Causal (look-ahead) mask: position i sees only j ≤ i; upper triangle (diagonal=1) masked.",  // C24
    "Mask before softmax with -inf: masked weights become exactly 0 and the rest still sum to 1. Zeroing weights after softmax leaves rows that no longer sum to 1.",  // C25
    "Padding is applied on the key side (column j); padded query rows can be ignored because the loss masks them.",  // C26
    "Smoke test: print one row of weights; padded positions ≈ 0, the rest sums to 1. Many \"loss won't go down\" bugs are masks applied the wrong way round.",  // C27
    "A2: common mask bugs: forgetting the look-ahead mask in a decoder; filling with 0 instead of -1e9; masking after softmax. A2 fills with -1e9, A1 with -inf (the two differ on a fully masked row).",  // C28
    "Split d_model into h heads (512 = 8 × 64); each head attends in its own subspace; concat then W_o mixes the heads back.",  // C29
    "Cost: 8 heads × 64 dims cost the same projection parameters/FLOPs as one 512-dim head.",  // C30
    "Merging heads: transpose [b,h,s,d] → [b,s,h,d] before view/reshape to [b,s,h·d]; a view without the transpose scrambles heads; .contiguous() is needed after transpose.",  // C31
    "Heads do not automatically specialise; often several heads learn near-identical patterns (\"head homogenisation\"). Diagnose by saving each layer's weights and comparing per-head mean entropy.",  // C32
    "A2: multiple heads give the gradient several paths; if some heads' gradients vanish, others still learn.",  // C33
    "A2 §3.2: weights are interpretable, e.g. in \"The animal didn't cross the street because it was too tired\", \"it\" puts high weight on \"animal\".",  // C34
    "torch.bmm needs 3-D inputs and multiplies the last two dims; matmul broadcasts, so a wrong rank can \"work\" with the wrong meaning. Assert shapes after each transform.",  // C35
    "Loss not moving: first suspect a missing √d_k scaling, then too-large init of W_q, W_k (use a smaller std, ~1/√d_k).",  // C36
    "Overfit test: a model that cannot memorise a few dozen random examples has a broken attention.",  // C37
    "Attention dropout goes on the weights after softmax, not on the scores; p≈0.1; off at inference. Dropout on scores distorts the whole distribution. p > 0.2 slows convergence.",  // C38
    "Stabilise with L2-normalised Q and K, log_softmax, and loss scaling in mixed precision.",  // C39
    "Attention memory is O(n²); remedies: gradient checkpointing, memory-efficient attention (FlashAttention), chunking the sequence.",  // C40
    "On GPUs: fuse scale + softmax, use tensor cores in mixed precision, stage tiles in shared memory.",  // C41
    "Sparse attention for long inputs: local window, strided, global + local.",  // C42
    "Linear attention via kernels, O(n): Performer (orthogonal random features), Linear Transformer (exponential/elu kernel), cosFormer (cosine re-weighting).",  // C43
    "A2: these variants keep ~90% of the quality while extending the usable length 10x or more.",  // C44
}};
}  // namespace

std::string_view claim_text(std::string_view id) {
    if (id.size() < 2 || id[0] != 'C') return {};
    int n = 0;
    for (char c : id.substr(1)) {
        if (c < '0' || c > '9') return {};
        n = n * 10 + (c - '0');
        if (n > static_cast<int>(kClaims.size())) return {};
    }
    return n >= 1 ? kClaims[static_cast<size_t>(n - 1)] : std::string_view{};
}

}  // namespace attn::lessons
