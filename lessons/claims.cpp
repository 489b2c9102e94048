// The claim registry (claims.hpp): our one-line rendering of each of the 44 claims and where the source
// says it; claim_text (lesson.hpp) for --quote.
#include "claims.hpp"

#include <cctype>
#include <string>
#include <vector>

#include "lesson.hpp"

namespace attn::lessons {

namespace {

// Our one-line rendering of each claim (the ids and facts of the claim summary,
// said in our words) and where the source says it.
const std::vector<ClaimInfo>& registry() {
    static const std::vector<ClaimInfo> r{
        {"C1",
         "An RNN compresses its whole past into one fixed-size state, so far tokens fade (errors grow past about "
         "40 tokens).",
         {{1, "1.1"}}},
        {"C2",
         "An RNN runs step by step; attention is matrix products over all positions at once.",
         {{1, "1.1"}, {2, "1"}}},
        {"C3",
         "Attention is a soft lookup: the query asks, keys label, values carry content, every value weighted by "
         "a softmax of the match.",
         {{1, "1.2"}}},
        {"C4", "Any two tokens interact directly, however far apart they are.", {{2, "1"}}},
        {"C5",
         "Q, K and V are linear maps of x [batch, seq, d_model]; Q and K have width d_k, V has width d_v.",
         {{1, "2.1"}, {2, "2.1"}}},
        {"C6", "Q and K must share d_k for the dot product; d_v is free to differ.", {{2, "2.2"}}},
        {"C7", "nn.Linear keeps its weight as [out, in] and computes x·Wᵀ + b.", {{1, "4.2"}}},
        {"C8", "Keeping or dropping the Q/K/V bias is a habit, not a mathematical need.", {{1, "4.2"}}},
        {"C9", "Initialise with Xavier or Kaiming, never with all zeros, and each head on its own.", {{2, "2.1"}}},
        {"C10", "For long inputs d_k may be lowered to save compute, but never below 64.", {{2, "2.2"}}},
        {"C11", "A dot product measures direction, and the vectors' lengths inflate it too.", {{1, "2.2"}}},
        {"C12", "softmax of [0, 3] is about [0.047, 0.953]; of [0, 30], about [0, 1].", {{1, "2.3"}}},
        {"C13",
         "A near one-hot softmax passes almost no gradient, so attention can lock onto one position early and "
         "stay there.",
         {{1, "2.3"}}},
        {"C14", "For independent entries of mean 0 and variance 1, q·k has mean 0 and variance d_k.", {{1, "3.1"}}},
        {"C15",
         "The score's spread for d_k 1, 16, 64, 512 is about 1, 4, 8, 22.6, with ranges of three times that.",
         {{1, "3.1"}}},
        {"C16",
         "exp(24) is about 2.6e10 against exp(0) = 1: unscaled scores at d_k 64 make the softmax nearly "
         "one-hot.",
         {{1, "3.1"}}},
        {"C17", "Dividing by √d_k brings the score variance back to about 1 at any d_k.", {{1, "3.1"}}},
        {"C18", "Without the scaling the model barely trains and its weights sit near 0 or 1.", {{2, "3.1"}}},
        {"C19",
         "Cosine scores stay in [-1, 1] but discard the vectors' lengths, which may carry meaning.",
         {{1, "3.2"}}},
        {"C20", "A fixed divisor such as 10 in place of √d_k trains slightly worse.", {{1, "3.2"}}},
        {"C21",
         "The naive single head at batch 2, seq 6, d_model 16, d_k 16 has the shapes the source lists.",
         {{1, "4.1"}}},
        {"C22", "Scores are Q·Kᵀ, K transposed on its last two dims: not K·Qᵀ, not Q·K.", {{1, "4.1"}, {1, "6.1"}}},
        {"C23", "Padded keys get no weight; the padding mask broadcasts as [batch, 1, seq].", {{1, "4.3"}}},
        {"C24", "The causal mask lets position i see only keys j ≤ i: the upper triangle is masked.", {{1, "4.3"}}},
        {"C25",
         "Masking with -inf before softmax gives exact zeros and rows summing to 1; zeroing weights afterwards "
         "does not.",
         {{1, "4.3"}}},
        {"C26", "Padding is masked on the key side; padded query rows are left to the loss.", {{1, "4.3"}}},
        {"C27",
         "Printing one row of weights (padded ones near 0, the rest summing to 1) is a smoke test for masks.",
         {{1, "4.4"}}},
        {"C28",
         "Usual mask bugs: no causal mask, filling with 0, masking after softmax; -1e9 and -inf differ on a "
         "fully masked row.",
         {{2, "5.1"}, {1, "4.3"}}},
        {"C29",
         "d_model splits into h heads (512 = 8 × 64) that attend apart, and W_o mixes them back.",
         {{1, "5.1"}, {2, "4.1"}}},
        {"C30", "8 heads of 64 cost the same projection parameters and FLOPs as one head of 512.", {{1, "5.1"}}},
        {"C31",
         "Merging heads needs the transpose before the reshape, and .contiguous() after the transpose.",
         {{1, "5.2"}}},
        {"C32",
         "Heads often fail to specialise and learn near-identical patterns; compare each head's mean entropy.",
         {{1, "5.3"}}},
        {"C33",
         "Several heads give the gradient several paths: when some heads stall, the others still learn.",
         {{2, "4.2"}}},
        {"C34",
         "The weights can be read: in the source's sentence about a tired animal, the pronoun looks at the "
         "animal.",
         {{2, "3.2"}}},
        {"C35",
         "bmm wants 3-D inputs while matmul broadcasts, so a wrong rank can run with a wrong meaning; assert "
         "the shapes.",
         {{1, "6.1"}}},
        {"C36",
         "When the loss does not move, check the √d_k scaling first, then a too-large init of W_q and W_k.",
         {{1, "6.2"}}},
        {"C37", "A model that cannot memorise a few dozen random examples has a broken attention.", {{1, "6.2"}}},
        {"C38",
         "Dropout goes on the weights after softmax (p about 0.1, off at inference); p above 0.2 slows "
         "training.",
         {{1, "6.3"}}},
        {"C39",
         "L2-normalised Q and K, log_softmax and loss scaling keep mixed-precision training stable.",
         {{2, "5.2"}}},
        {"C40",
         "Attention memory grows as n²; checkpointing, memory-efficient attention and chunking reduce it.",
         {{2, "6.1"}}},
        {"C41",
         "On GPUs, fuse the scale and the softmax, use tensor cores and stage tiles in shared memory.",
         {{2, "6.2"}}},
        {"C42", "Long inputs can use sparse patterns: a local window, strides, global plus local.", {{2, "7.1"}}},
        {"C43",
         "Kernel-based linear attention runs in O(n): Performer, the Linear Transformer, cosFormer.",
         {{2, "7.2"}}},
        {"C44", "These variants keep about 90% of the quality at 10 times the length or more.", {{2, "7.2"}}},
    };
    return r;
}

}  // namespace

const std::vector<ClaimInfo>& claim_registry() { return registry(); }

const ClaimInfo* find_claim(std::string_view id) {
    std::string s(id);
    if (!s.empty()) s[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(s[0])));
    for (const ClaimInfo& c : registry())
        if (c.id == s) return &c;
    return nullptr;
}

std::string claim_where(const ClaimInfo& c, Lang lang) {
    std::string out;
    for (const auto& [article, section] : c.where)
        out += (out.empty() ? std::string() : std::string(translate(lang, "; "))) +
               format_in(lang, "article {}, §{}", article, section);
    return out;
}

std::string_view claim_text(std::string_view id) {
    if (id.empty() || id[0] != 'C') return {};
    const ClaimInfo* c = find_claim(id);
    return c == nullptr ? std::string_view{} : std::string_view(c->says);
}

}  // namespace attn::lessons
