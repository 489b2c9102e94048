// attn/train/tasks.hpp: the toy problems `attn train` learns, generated on the fly.
//
// A task turns (seed, split, step) into a batch of token rows: tokens (B, T) and
// targets (B, T), where targets[b, t] is the id the model must predict at
// position t, or -1 where nothing is scored. The batch is a pure function of
// those arguments (attn's counter-seeded Rng, one stream per step), so the same
// seed gives the same data at any thread count, and the eval split (its own
// seed stream) never repeats a training batch.
//
// Symbol tasks (copy, reverse, sort, recall) have a prompt and an answer. Two
// layouts put them in a row of T tokens:
//   decoder (causal):  prompt, answer            targets: the next token, scored where it is an answer token
//   encoder (bidir.):  prompt, [MASK] x |answer| targets: the answer at the [MASK] positions
// A decoder is taught with teacher forcing: at each answer position it sees the
// true answer so far, and accuracy is "next answer token right given the true
// prefix". Leftover positions at the end of a row are [PAD] with target -1.
//
//   copy      x1..xn SEP -> x1..xn           n = (T-1)/2 symbols drawn from --symbols
//   reverse   x1..xn SEP -> xn..x1
//   sort      x1..xn SEP -> x sorted ascending (repeats allowed)
//   recall    k1 v1 .. kp vp q -> the v of q  p = (T-2Q)/2 pairs, distinct keys from
//                                              max(symbols, p) keys, values from the
//                                              symbols; Q queries (default 1), distinct
//                                              keys of the pairs, each followed by its
//                                              answer (decoder) or a [MASK] (encoder):
//                                              .. kp vp q1 a1 q2 a2 ..
//   distance  x1..xT, target at t >= d: x(t-d)  every position t >= d scored
//   chars     T bytes of the corpus, target at t: byte t+1   every position scored;
//             train batches from the first 90% of the text, eval from the last 10%
//   induction f1..fp r1..rn r1..rn                 random tokens repeated once (the induction-head
//             setting): n drawn per row from [nlo, T/2] with nlo = max(2, T/4), p = T - 2n
//             random filler tokens first; next-token targets on the last nlo - 1 tokens of
//             the second copy (every row has them): the repeated half's loss. n varies so
//             that no fixed positional offset predicts the copy; only in-context matching does
//
// Token ids: symbols 0..S-1, then SEP, MASK, PAD (recall: keys, then values,
// then MASK, PAD). chars: one id per distinct byte of the corpus, in byte order.
// distance and induction: the symbols only.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace attn {

enum class TaskKind { Copy, Reverse, Sort, Recall, Distance, Chars, Induction };

std::vector<TaskKind> all_tasks();
const char* task_name(TaskKind k);     // "copy", ...
const char* task_summary(TaskKind k);  // one line: what the input is and what is predicted
// "copy" -> TaskKind::Copy; InputError "unknown task 'x' (one of copy, reverse, ...)".
TaskKind task_of(std::string_view name);
// Decoder (true) for every task: with an encoder, recall sits on a plateau far longer
// (README, Training); --arch encoder still gives one (chars excepted).
bool task_default_causal(TaskKind k);
// T when the user gives none: 17 for copy, reverse and sort (8 symbols, a separator, 8
// answers), 16 for recall and distance, 64 for chars, 32 for induction.
int64_t task_default_seq(TaskKind k);

enum class DataSplit { Train, Eval };

struct TaskOptions {
    int64_t seq = 16;        // T: tokens per row
    int64_t symbols = 16;    // S: alphabet of copy/reverse/sort/distance, values of recall
    int64_t distance = 4;    // d of the distance task, in [1, T-1]
    int64_t queries = 1;     // Q of the recall task: keys asked per row, in [1, p]
    bool causal = true;      // layout (see above); chars needs true
    std::string corpus;      // chars: the text (bytes)
};

inline constexpr int64_t kMaxSymbols = 1024;
inline constexpr int64_t kMaxTaskSeq = 4096;
// The characters token_text shows the symbols as: a-z, A-Z, 0-9, then the printable
// ASCII punctuation; symbols past it are shown as s94, s95, ...
inline constexpr char kSymbolAlphabet[] =
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~";
inline constexpr int64_t kSymbolAlphabetSize = sizeof(kSymbolAlphabet) - 1;
static_assert(kSymbolAlphabetSize == 94, "the 94 printable ASCII characters");

struct TaskBatch {
    int64_t B = 0, T = 0;
    std::vector<int32_t> tokens;   // (B, T), ids in [0, vocab)
    std::vector<int32_t> targets;  // (B, T), ids in [0, vocab) or -1 (not scored)
};

class Task {
public:
    // Throws InputError (naming no flag) when the options do not make a task:
    // T too short for one item, symbols out of [2, kMaxSymbols], d out of
    // [1, T-1], chars with an encoder or with a corpus shorter than 10 (T+1).
    Task(TaskKind kind, TaskOptions opt);

    TaskKind kind() const { return kind_; }
    const char* name() const { return task_name(kind_); }
    const TaskOptions& options() const { return opt_; }
    int64_t seq() const { return opt_.seq; }
    bool causal() const { return opt_.causal; }
    int64_t vocab() const { return vocab_; }
    // Scored positions in every row (the same for every row of a task).
    int64_t scored_per_row() const;
    // copy, reverse and sort also report whole-sequence exact match.
    bool has_exact_match() const;
    // Accuracy of a guess that ignores the input: 1 / (answer alphabet); chars: the most common byte's share.
    double chance_accuracy() const;
    // A short label of a token id ("c", "k3", "v7", "SEP", "\n"), for dumps and tables.
    std::string token_text(int32_t id) const;
    // The byte a token stands for when the model is written as a byte-level vocabulary (a
    // GPT-2 folder): chars: its byte; symbol s as kSymbolAlphabet[s]; -1 for every other id
    // (SEP, MASK, PAD, recall's keys and values, symbols past the alphabet).
    int token_byte(int32_t id) const;

    // The batch for (seed, split, step): B rows of T tokens.
    TaskBatch batch(int64_t B, uint64_t seed, DataSplit split, int64_t step) const;
    // induction: the shortest copy n of a row (nlo above), the longest (T / 2)
    int64_t induction_min_copy() const { return std::max<int64_t>(2, opt_.seq / 4); }
    int64_t induction_max_copy() const { return opt_.seq / 2; }

private:
    TaskKind kind_;
    TaskOptions opt_;
    int64_t vocab_ = 0;
    int64_t n_ = 0;                  // copy/reverse/sort: symbols per row; recall: pairs
    int64_t keys_ = 0;               // recall: key alphabet
    std::vector<int32_t> byte_id_;   // chars: byte -> id (-1 when absent)
    std::vector<unsigned char> id_byte_;
    std::vector<int32_t> text_;      // chars: the corpus as ids
    int64_t split_at_ = 0;           // chars: first id of the eval part
    double chance_ = 0;

    void fill_row(int32_t* tok, int32_t* tgt, uint64_t seed, DataSplit split, int64_t step, int64_t row) const;
};

// Per-token and per-row scoring of predictions (argmax ids, (B, T)) against a batch.
struct TaskScore {
    int64_t correct = 0, counted = 0;      // scored tokens right / scored tokens
    int64_t rows_exact = 0, rows = 0;      // rows with every scored token right / rows with one
    double accuracy() const { return counted ? static_cast<double>(correct) / static_cast<double>(counted) : 0.0; }
    double exact_match() const { return rows ? static_cast<double>(rows_exact) / static_cast<double>(rows) : 0.0; }
    TaskScore& operator+=(const TaskScore& o);
};
TaskScore score_predictions(const TaskBatch& batch, const std::vector<int32_t>& predictions);

// The ids of the largest logit per position: logits (N, V) row-major -> N ids
// (the first index on ties, as torch.argmax).
std::vector<int32_t> argmax_rows(const float* logits, int64_t n, int64_t vocab);

}  // namespace attn
