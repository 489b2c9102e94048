// The toy tasks of attn/train/tasks.hpp. Each row is drawn by its own
// generator Rng(key(seed, split, step), row), so a row depends on nothing but
// (seed, split, step, row): not on B, not on the thread that builds it.
#include "attn/train/tasks.hpp"

#include <algorithm>
#include <array>
#include <numeric>

#include <fmt/core.h>

#include "attn/core/errors.hpp"
#include "attn/core/rng.hpp"

namespace attn {

std::vector<TaskKind> all_tasks() {
    return {TaskKind::Copy,     TaskKind::Reverse, TaskKind::Sort,     TaskKind::Recall,
            TaskKind::Distance, TaskKind::Chars,   TaskKind::Induction};
}

const char* task_name(TaskKind k) {
    switch (k) {
        case TaskKind::Copy: return "copy";
        case TaskKind::Reverse: return "reverse";
        case TaskKind::Sort: return "sort";
        case TaskKind::Recall: return "recall";
        case TaskKind::Distance: return "distance";
        case TaskKind::Chars: return "chars";
        case TaskKind::Induction: return "induction";
    }
    return "?";
}

const char* task_summary(TaskKind k) {
    switch (k) {
        case TaskKind::Copy: return "x1..xn SEP -> x1..xn: repeat the symbols after the separator";
        case TaskKind::Reverse: return "x1..xn SEP -> xn..x1: the symbols in reverse order";
        case TaskKind::Sort: return "x1..xn SEP -> the symbols sorted ascending (repeats allowed)";
        case TaskKind::Recall:
            return "k1 v1 k2 v2 .. kp vp q -> the value paired with key q (associative recall: attention as a soft "
                   "lookup); with N queries, N keys are asked in turn";
        case TaskKind::Distance: return "x1..xT -> at each t >= d, the token seen d steps back, x(t-d)";
        case TaskKind::Chars: return "a window of the text -> at each position, the next character (byte)";
        case TaskKind::Induction:
            return "random tokens, then the same tokens again -> the next token of the repeat (in-context copying: "
                   "induction heads)";
    }
    return "?";
}

TaskKind task_of(std::string_view name) {
    std::string names;
    for (TaskKind k : all_tasks()) {
        if (name == task_name(k)) return k;
        names += fmt::format("{}{}", names.empty() ? "" : ", ", task_name(k));
    }
    throw InputError(fmt::format("unknown task '{}' (one of {})", name, names));
}

bool task_default_causal(TaskKind k) {
    (void)k;  // every task: a decoder learns each of them at the defaults (recall: README, Training)
    return true;
}

int64_t task_default_seq(TaskKind k) {
    switch (k) {
        case TaskKind::Copy:
        case TaskKind::Reverse:
        case TaskKind::Sort: return 17;
        case TaskKind::Recall:
        case TaskKind::Distance: return 16;
        case TaskKind::Chars: return 64;
        case TaskKind::Induction: return 32;
    }
    return 16;
}

TaskScore& TaskScore::operator+=(const TaskScore& o) {
    correct += o.correct;
    counted += o.counted;
    rows_exact += o.rows_exact;
    rows += o.rows;
    return *this;
}

namespace {

// A uniform integer in [0, n); n <= kMaxSymbols, so the modulo bias (< n / 2^64) is nil.
int64_t below(Rng& r, int64_t n) { return static_cast<int64_t>(r.next_u64() % static_cast<uint64_t>(n)); }

uint64_t split_salt(DataSplit s) { return s == DataSplit::Train ? 0x7472616e00000000ULL : 0x6576616c00000000ULL; }

}  // namespace

Task::Task(TaskKind kind, TaskOptions opt) : kind_(kind), opt_(std::move(opt)) {
    const int64_t T = opt_.seq;
    if (T < 1 || T > kMaxTaskSeq)
        throw InputError(fmt::format("the sequence length must be in [1, {}], got {}", kMaxTaskSeq, T));
    if (opt_.symbols < 2 || opt_.symbols > kMaxSymbols)
        throw InputError(fmt::format("the number of symbols must be in [2, {}], got {}", kMaxSymbols, opt_.symbols));
    const int64_t S = opt_.symbols;
    switch (kind_) {
        case TaskKind::Copy:
        case TaskKind::Reverse:
        case TaskKind::Sort:
            n_ = (T - 1) / 2;
            if (n_ < 1)
                throw InputError(fmt::format("task {} needs a sequence of at least 3 tokens (x SEP x), got {}",
                                             task_name(kind_), T));
            vocab_ = S + 3;  // symbols, SEP, MASK, PAD
            chance_ = 1.0 / static_cast<double>(S);
            break;
        case TaskKind::Recall:
            if (opt_.queries < 1 || opt_.queries > kMaxTaskSeq)
                throw InputError(
                    fmt::format("the number of queries must be in [1, {}], got {}", kMaxTaskSeq, opt_.queries));
            n_ = (T - 2 * opt_.queries) / 2;
            if (n_ < opt_.queries)
                throw InputError(fmt::format("task recall with {} quer{} needs a sequence of at least {} tokens "
                                             "(as many pairs as queries), got {}",
                                             opt_.queries, opt_.queries == 1 ? "y" : "ies", 4 * opt_.queries, T));
            keys_ = std::max(S, n_);
            vocab_ = keys_ + S + 2;  // keys, values, MASK, PAD
            chance_ = 1.0 / static_cast<double>(S);
            break;
        case TaskKind::Distance:
            if (opt_.distance < 1 || opt_.distance > T - 1)
                throw InputError(
                    fmt::format("the distance must be in [1, T-1] = [1, {}], got {}", T - 1, opt_.distance));
            vocab_ = S;
            chance_ = 1.0 / static_cast<double>(S);
            break;
        case TaskKind::Induction:
            if (!opt_.causal)
                throw InputError("task induction needs a causal (decoder) model: an encoder would see the next token");
            if (T < 6) throw InputError(fmt::format("task induction needs a sequence of at least 6 tokens, got {}", T));
            vocab_ = S;
            chance_ = 1.0 / static_cast<double>(S);
            break;
        case TaskKind::Chars: {
            if (!opt_.causal)
                throw InputError("task chars needs a causal (decoder) model: an encoder would see the next character");
            const int64_t len = static_cast<int64_t>(opt_.corpus.size());
            split_at_ = len - len / 10;
            if (len / 10 < T + 1)
                throw InputError(
                    fmt::format("the corpus has {} bytes; its last tenth (the eval part) must hold a window "
                                "of T+1 = {}, so it needs at least {} bytes",
                                len, T + 1, 10 * (T + 1)));
            byte_id_.assign(256, -1);
            std::array<int64_t, 256> count{};
            for (char c : opt_.corpus) ++count[static_cast<unsigned char>(c)];
            for (int b = 0; b < 256; ++b)
                if (count[static_cast<size_t>(b)] > 0) {
                    byte_id_[static_cast<size_t>(b)] = static_cast<int32_t>(id_byte_.size());
                    id_byte_.push_back(static_cast<unsigned char>(b));
                }
            vocab_ = static_cast<int64_t>(id_byte_.size());
            text_.reserve(opt_.corpus.size());
            for (char c : opt_.corpus) text_.push_back(byte_id_[static_cast<unsigned char>(c)]);
            chance_ = static_cast<double>(*std::max_element(count.begin(), count.end())) / static_cast<double>(len);
            opt_.corpus.clear();  // the ids are kept; the text is not needed twice
            opt_.corpus.shrink_to_fit();
            break;
        }
    }
}

int64_t Task::scored_per_row() const {
    switch (kind_) {
        case TaskKind::Copy:
        case TaskKind::Reverse:
        case TaskKind::Sort: return n_;
        case TaskKind::Recall: return opt_.queries;
        case TaskKind::Distance: return opt_.seq - opt_.distance;
        case TaskKind::Chars: return opt_.seq;
        case TaskKind::Induction: return induction_min_copy() - 1;
    }
    return 0;
}

bool Task::has_exact_match() const {
    return kind_ == TaskKind::Copy || kind_ == TaskKind::Reverse || kind_ == TaskKind::Sort;
}

double Task::chance_accuracy() const { return chance_; }

std::string Task::token_text(int32_t id) const {
    if (id < 0 || id >= vocab_) return "?";
    const int64_t S = opt_.symbols;
    auto symbol = [&](int64_t s) {
        return s < kSymbolAlphabetSize ? std::string(1, kSymbolAlphabet[s]) : fmt::format("s{}", s);
    };
    switch (kind_) {
        case TaskKind::Copy:
        case TaskKind::Reverse:
        case TaskKind::Sort:
            if (id < S) return symbol(id);
            return id == S ? "SEP" : id == S + 1 ? "MASK" : "PAD";
        case TaskKind::Recall:
            if (id < keys_) return fmt::format("k{}", id);
            if (id < keys_ + S) return fmt::format("v{}", id - keys_);
            return id == keys_ + S ? "MASK" : "PAD";
        case TaskKind::Distance:
        case TaskKind::Induction: return symbol(id);
        case TaskKind::Chars: {
            const unsigned char b = id_byte_[static_cast<size_t>(id)];
            if (b == '\n') return "\\n";
            if (b == ' ') return "\u2423";  // ␣, visible in a table
            if (b < 0x20 || b >= 0x7f) return fmt::format("\\x{:02x}", b);
            return std::string(1, static_cast<char>(b));
        }
    }
    return "?";
}

int Task::token_byte(int32_t id) const {
    if (id < 0 || id >= vocab_) return -1;
    switch (kind_) {
        case TaskKind::Chars: return id_byte_[static_cast<size_t>(id)];
        case TaskKind::Copy:
        case TaskKind::Reverse:
        case TaskKind::Sort:
            if (id >= opt_.symbols) return -1;  // SEP, MASK, PAD: no byte spells them
            [[fallthrough]];
        case TaskKind::Distance:
        case TaskKind::Induction:
            return id < kSymbolAlphabetSize ? static_cast<unsigned char>(kSymbolAlphabet[id]) : -1;
        case TaskKind::Recall: return -1;  // keys and values are two alphabets
    }
    return -1;
}

void Task::fill_row(int32_t* tok, int32_t* tgt, uint64_t seed, DataSplit split, int64_t step, int64_t row) const {
    const int64_t T = opt_.seq, S = opt_.symbols;
    Rng r(mix64(seed ^ split_salt(split)) ^ mix64(static_cast<uint64_t>(step) + 0x51ed270b27f3a1c9ULL),
          static_cast<uint64_t>(row));
    std::fill(tgt, tgt + T, -1);
    // A prompt and an answer, laid out as a decoder or an encoder row (tasks.hpp).
    auto lay_out = [&](const std::vector<int32_t>& prompt, const std::vector<int32_t>& answer, int32_t mask,
                       int32_t pad) {
        const int64_t P = static_cast<int64_t>(prompt.size()), A = static_cast<int64_t>(answer.size());
        std::copy(prompt.begin(), prompt.end(), tok);
        for (int64_t j = 0; j < A; ++j) {
            if (opt_.causal) {
                tok[P + j] = answer[static_cast<size_t>(j)];
                tgt[P + j - 1] = answer[static_cast<size_t>(j)];  // predicted at the position before it
            } else {
                tok[P + j] = mask;
                tgt[P + j] = answer[static_cast<size_t>(j)];
            }
        }
        std::fill(tok + P + A, tok + T, pad);
    };
    switch (kind_) {
        case TaskKind::Copy:
        case TaskKind::Reverse:
        case TaskKind::Sort: {
            std::vector<int32_t> x(static_cast<size_t>(n_));
            for (auto& v : x) v = static_cast<int32_t>(below(r, S));
            std::vector<int32_t> prompt = x;
            prompt.push_back(static_cast<int32_t>(S));  // SEP
            if (kind_ == TaskKind::Reverse) std::reverse(x.begin(), x.end());
            if (kind_ == TaskKind::Sort) std::sort(x.begin(), x.end());
            lay_out(prompt, x, static_cast<int32_t>(S + 1), static_cast<int32_t>(S + 2));
            break;
        }
        case TaskKind::Recall: {
            // p distinct keys: a partial Fisher-Yates shuffle of the key alphabet.
            std::vector<int32_t> keys(static_cast<size_t>(keys_));
            std::iota(keys.begin(), keys.end(), 0);
            for (int64_t i = 0; i < n_; ++i)
                std::swap(keys[static_cast<size_t>(i)], keys[static_cast<size_t>(i + below(r, keys_ - i))]);
            std::vector<int32_t> values(static_cast<size_t>(n_));
            for (int64_t i = 0; i < n_; ++i) {
                values[static_cast<size_t>(i)] = static_cast<int32_t>(keys_ + below(r, S));
                tok[2 * i] = keys[static_cast<size_t>(i)];
                tok[2 * i + 1] = values[static_cast<size_t>(i)];
            }
            // Q distinct pairs asked, in random order: q then its answer (decoder) or [MASK] (encoder).
            std::vector<int64_t> asked(static_cast<size_t>(n_));
            std::iota(asked.begin(), asked.end(), 0);
            const int64_t Q = opt_.queries, mask = keys_ + S;
            for (int64_t j = 0; j < Q; ++j) {
                std::swap(asked[static_cast<size_t>(j)], asked[static_cast<size_t>(j + below(r, n_ - j))]);
                const int64_t i = asked[static_cast<size_t>(j)], at = 2 * n_ + 2 * j;
                tok[at] = keys[static_cast<size_t>(i)];
                if (opt_.causal) {
                    tok[at + 1] = values[static_cast<size_t>(i)];
                    tgt[at] = values[static_cast<size_t>(i)];
                } else {
                    tok[at + 1] = static_cast<int32_t>(mask);
                    tgt[at + 1] = values[static_cast<size_t>(i)];
                }
            }
            std::fill(tok + 2 * n_ + 2 * Q, tok + T, static_cast<int32_t>(mask + 1));  // PAD
            break;
        }
        case TaskKind::Distance:
            for (int64_t t = 0; t < T; ++t) tok[t] = static_cast<int32_t>(below(r, S));
            for (int64_t t = opt_.distance; t < T; ++t) tgt[t] = tok[t - opt_.distance];
            break;
        case TaskKind::Induction: {
            // f1..fp r1..rn r1..rn, n in [nlo, T/2]; targets: the last nlo - 1 next tokens
            const int64_t lo = induction_min_copy(), n = lo + below(r, induction_max_copy() - lo + 1), p = T - 2 * n;
            for (int64_t t = 0; t < p + n; ++t) tok[t] = static_cast<int32_t>(below(r, S));
            for (int64_t t = p + n; t < T; ++t) tok[t] = tok[t - n];
            for (int64_t t = T - lo; t < T - 1; ++t) tgt[t] = tok[t + 1];
            break;
        }
        case TaskKind::Chars: {
            // A window of T+1 ids inside the split's part of the text.
            const int64_t lo = split == DataSplit::Train ? 0 : split_at_;
            const int64_t hi = split == DataSplit::Train ? split_at_ : static_cast<int64_t>(text_.size());
            const int64_t start = lo + below(r, hi - lo - T);
            for (int64_t t = 0; t < T; ++t) {
                tok[t] = text_[static_cast<size_t>(start + t)];
                tgt[t] = text_[static_cast<size_t>(start + t + 1)];
            }
            break;
        }
    }
}

TaskBatch Task::batch(int64_t B, uint64_t seed, DataSplit split, int64_t step) const {
    if (B < 1) throw InputError(fmt::format("the batch must hold at least one row, got {}", B));
    TaskBatch b;
    b.B = B;
    b.T = opt_.seq;
    b.tokens.assign(static_cast<size_t>(B * b.T), 0);
    b.targets.assign(static_cast<size_t>(B * b.T), -1);
    for (int64_t row = 0; row < B; ++row)
        fill_row(b.tokens.data() + row * b.T, b.targets.data() + row * b.T, seed, split, step, row);
    return b;
}

TaskScore score_predictions(const TaskBatch& batch, const std::vector<int32_t>& predictions) {
    if (static_cast<int64_t>(predictions.size()) != batch.B * batch.T)
        throw InputError(fmt::format("{} predictions for a batch of {} x {} tokens", predictions.size(), batch.B,
                                     batch.T));
    TaskScore s;
    for (int64_t row = 0; row < batch.B; ++row) {
        int64_t scored = 0, right = 0;
        for (int64_t t = 0; t < batch.T; ++t) {
            const size_t i = static_cast<size_t>(row * batch.T + t);
            if (batch.targets[i] < 0) continue;
            ++scored;
            right += predictions[i] == batch.targets[i];
        }
        s.correct += right;
        s.counted += scored;
        if (scored > 0) {
            ++s.rows;
            s.rows_exact += right == scored;
        }
    }
    return s;
}

std::vector<int32_t> argmax_rows(const float* logits, int64_t n, int64_t vocab) {
    std::vector<int32_t> out(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
        const float* row = logits + i * vocab;
        int64_t best = 0;
        for (int64_t v = 1; v < vocab; ++v)
            if (row[v] > row[best]) best = v;
        out[static_cast<size_t>(i)] = static_cast<int32_t>(best);
    }
    return out;
}

}  // namespace attn
