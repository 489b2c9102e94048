// The training tasks (attn/train/tasks.hpp): every batch holds valid ids, its
// answers agree with an independent reading of its prompt, and it is a pure
// function of (seed, split, step, row).
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <set>

#include "attn/core/errors.hpp"
#include "attn/io/dump.hpp"
#include "attn/train/tasks.hpp"
#include "test_util.hpp"

using namespace attn;

namespace {

std::string corpus() { return read_file(test::source_path("data/macbeth.txt")); }

Task make(TaskKind k, int64_t T, bool causal, int64_t symbols = 16, int64_t d = 4) {
    TaskOptions o;
    o.seq = T;
    o.symbols = symbols;
    o.distance = d;
    o.causal = causal;
    if (k == TaskKind::Chars) o.corpus = corpus();
    return Task(k, o);
}

void check_ids(const Task& task, const TaskBatch& b) {
    REQUIRE(b.tokens.size() == static_cast<size_t>(b.B * b.T));
    REQUIRE(b.targets.size() == static_cast<size_t>(b.B * b.T));
    for (int32_t t : b.tokens) REQUIRE((t >= 0 && t < task.vocab()));
    for (int32_t t : b.targets) REQUIRE((t >= -1 && t < task.vocab()));
    for (int64_t row = 0; row < b.B; ++row) {
        int64_t scored = 0;
        for (int64_t t = 0; t < b.T; ++t) scored += b.targets[static_cast<size_t>(row * b.T + t)] >= 0;
        CHECK(scored == task.scored_per_row());
    }
}

// The answer a symbol task expects, computed here from the prompt x alone.
std::vector<int32_t> expected_answer(TaskKind k, std::vector<int32_t> x) {
    if (k == TaskKind::Reverse) std::reverse(x.begin(), x.end());
    if (k == TaskKind::Sort) std::sort(x.begin(), x.end());
    return x;
}

}  // namespace

TEST_CASE("tasks: names, the unknown task, defaults") {
    for (TaskKind k : all_tasks()) CHECK(task_of(task_name(k)) == k);
    CHECK_THROWS_AS(task_of("copyy"), InputError);
    try {
        task_of("nope");
    } catch (const InputError& e) {
        CHECK(std::string(e.what()).find("one of copy, reverse, sort, recall, distance, chars") != std::string::npos);
    }
    CHECK(task_default_causal(TaskKind::Copy));
    CHECK(task_default_causal(TaskKind::Recall));
}

TEST_CASE("tasks: copy, reverse and sort answer what the prompt asks, in both layouts") {
    for (TaskKind k : {TaskKind::Copy, TaskKind::Reverse, TaskKind::Sort})
        for (bool causal : {true, false})
            for (int64_t T : {3, 8, 17}) {
                CAPTURE(task_name(k));
                CAPTURE(causal);
                CAPTURE(T);
                const Task task = make(k, T, causal, 5);
                const int64_t S = 5, n = (T - 1) / 2;
                const TaskBatch b = task.batch(6, 42, DataSplit::Train, 3);
                check_ids(task, b);
                for (int64_t row = 0; row < b.B; ++row) {
                    const int32_t* tok = b.tokens.data() + row * T;
                    const int32_t* tgt = b.targets.data() + row * T;
                    std::vector<int32_t> x(tok, tok + n);
                    for (int32_t v : x) CHECK(v < S);
                    CHECK(tok[n] == S);  // SEP
                    const auto want = expected_answer(k, x);
                    for (int64_t j = 0; j < n; ++j) {
                        if (causal) {
                            CHECK(tok[n + 1 + j] == want[static_cast<size_t>(j)]);   // teacher forcing
                            CHECK(tgt[n + j] == want[static_cast<size_t>(j)]);       // predicted one step early
                        } else {
                            CHECK(tok[n + 1 + j] == S + 1);                           // MASK
                            CHECK(tgt[n + 1 + j] == want[static_cast<size_t>(j)]);
                        }
                    }
                    for (int64_t t = 2 * n + 1; t < T; ++t) CHECK(tok[t] == S + 2);  // PAD
                }
            }
}

TEST_CASE("tasks: recall asks for the values of keys that were given, keys distinct") {
    for (bool causal : {true, false})
        for (auto TQ : {std::pair<int64_t, int64_t>{4, 1}, {9, 1}, {64, 1}, {16, 4}, {64, 8}}) {
            const int64_t T = TQ.first, Q = TQ.second;  // clang 14: no structured binding inside CAPTURE
            CAPTURE(causal);
            CAPTURE(T);
            CAPTURE(Q);
            TaskOptions o;
            o.seq = T;
            o.symbols = 8;
            o.queries = Q;
            o.causal = causal;
            const Task task(TaskKind::Recall, o);
            const int64_t p = (T - 2 * Q) / 2, K = std::max<int64_t>(8, p);
            const TaskBatch b = task.batch(16, 7, DataSplit::Eval, 11);
            check_ids(task, b);
            for (int64_t row = 0; row < b.B; ++row) {
                const int32_t* tok = b.tokens.data() + row * T;
                const int32_t* tgt = b.targets.data() + row * T;
                std::map<int32_t, int32_t> pairs;
                for (int64_t i = 0; i < p; ++i) {
                    const int32_t key = tok[2 * i], value = tok[2 * i + 1];
                    CHECK(key < K);
                    CHECK((value >= K && value < K + 8));
                    CHECK(pairs.count(key) == 0);  // distinct keys
                    pairs[key] = value;
                }
                std::set<int32_t> asked;
                for (int64_t j = 0; j < Q; ++j) {
                    const int64_t at = 2 * p + 2 * j;
                    const int32_t q = tok[at];
                    REQUIRE(pairs.count(q) == 1);
                    CHECK(asked.insert(q).second);  // distinct queries
                    if (causal) {
                        CHECK(tgt[at] == pairs[q]);       // predicted at the query
                        CHECK(tok[at + 1] == pairs[q]);   // then shown
                        CHECK(tgt[at + 1] == -1);
                    } else {
                        CHECK(tgt[at] == -1);
                        CHECK(tok[at + 1] == K + 8);      // MASK
                        CHECK(tgt[at + 1] == pairs[q]);
                    }
                }
                for (int64_t t = 2 * p + 2 * Q; t < T; ++t) CHECK(tok[t] == K + 9);  // PAD
            }
        }
}

TEST_CASE("tasks: distance targets the token d steps back") {
    for (int64_t d : {1, 3, 15}) {
        const Task task = make(TaskKind::Distance, 16, true, 10, d);
        const TaskBatch b = task.batch(5, 1, DataSplit::Train, 0);
        check_ids(task, b);
        for (int64_t row = 0; row < b.B; ++row)
            for (int64_t t = 0; t < 16; ++t) {
                const int32_t want = t >= d ? b.tokens[static_cast<size_t>(row * 16 + t - d)] : -1;
                CHECK(b.targets[static_cast<size_t>(row * 16 + t)] == want);
            }
    }
    CHECK_THROWS_AS(make(TaskKind::Distance, 16, true, 10, 16), InputError);
    CHECK_THROWS_AS(make(TaskKind::Distance, 16, true, 10, 0), InputError);
}

TEST_CASE("tasks: chars windows are the corpus, train from its first 90%, eval from its last 10%") {
    const std::string text = corpus();
    REQUIRE(text.size() > 10000);
    REQUIRE(text.size() <= 1000000);  // data/README.md: at most 1 MB
    const Task task = make(TaskKind::Chars, 32, true);
    const size_t split_at = text.size() - text.size() / 10;
    for (DataSplit split : {DataSplit::Train, DataSplit::Eval}) {
        const TaskBatch b = task.batch(8, 3, split, 5);
        check_ids(task, b);
        for (int64_t row = 0; row < b.B; ++row) {
            std::string window;
            for (int64_t t = 0; t < 32; ++t) {
                const std::string s = task.token_text(b.tokens[static_cast<size_t>(row * 32 + t)]);
                window += s == "\\n" ? "\n" : s == "\u2423" ? " " : s;
            }
            const std::string last = task.token_text(b.targets[static_cast<size_t>(row * 32 + 31)]);
            window += last == "\\n" ? "\n" : last == "\u2423" ? " " : last;
            // The window (tokens then the last target) is a substring of the right part.
            const size_t at =
                split == DataSplit::Train ? text.substr(0, split_at).find(window) : text.find(window, split_at);
            CHECK(at != std::string::npos);
            for (int64_t t = 0; t + 1 < 32; ++t)
                CHECK(b.targets[static_cast<size_t>(row * 32 + t)] == b.tokens[static_cast<size_t>(row * 32 + t + 1)]);
        }
    }
    TaskOptions enc;
    enc.seq = 32;
    enc.causal = false;
    enc.corpus = text;
    CHECK_THROWS_AS(Task(TaskKind::Chars, enc), InputError);
    TaskOptions tiny;
    tiny.seq = 32;
    tiny.corpus = std::string(300, 'a');
    CHECK_THROWS_AS(Task(TaskKind::Chars, tiny), InputError);
}

TEST_CASE("tasks: a batch is a pure function of (seed, split, step), each row of (.., row)") {
    for (TaskKind k : all_tasks()) {
        CAPTURE(task_name(k));
        const Task task = make(k, 20, true);
        const TaskBatch a = task.batch(8, 99, DataSplit::Train, 17);
        const TaskBatch again = task.batch(8, 99, DataSplit::Train, 17);
        CHECK(a.tokens == again.tokens);
        CHECK(a.targets == again.targets);
        CHECK(task.batch(8, 99, DataSplit::Train, 18).tokens != a.tokens);
        CHECK(task.batch(8, 100, DataSplit::Train, 17).tokens != a.tokens);
        CHECK(task.batch(8, 99, DataSplit::Eval, 17).tokens != a.tokens);
        // Row r does not depend on the batch size.
        const TaskBatch wide = task.batch(16, 99, DataSplit::Train, 17);
        CHECK(std::equal(a.tokens.begin(), a.tokens.end(), wide.tokens.begin()));
        CHECK(std::equal(a.targets.begin(), a.targets.end(), wide.targets.begin()));
    }
}

TEST_CASE("tasks: options out of range are refused") {
    CHECK_THROWS_AS(make(TaskKind::Copy, 2, true), InputError);
    CHECK_THROWS_AS(make(TaskKind::Recall, 3, false), InputError);
    TaskOptions q;
    q.seq = 15;  // 4 queries need 4 pairs: 16 tokens
    q.queries = 4;
    CHECK_THROWS_AS(Task(TaskKind::Recall, q), InputError);
    q.seq = 16;
    CHECK_NOTHROW(Task(TaskKind::Recall, q));
    CHECK_THROWS_AS(make(TaskKind::Copy, 8, true, 1), InputError);
    CHECK_THROWS_AS(make(TaskKind::Copy, 8, true, kMaxSymbols + 1), InputError);
    CHECK_THROWS_AS(make(TaskKind::Copy, 0, true), InputError);
    CHECK_NOTHROW(make(TaskKind::Copy, 3, true));
    CHECK_NOTHROW(make(TaskKind::Recall, 4, false));
}

TEST_CASE("tasks: scoring counts scored tokens and whole rows") {
    const Task task = make(TaskKind::Copy, 9, true, 6);
    const TaskBatch b = task.batch(4, 5, DataSplit::Train, 0);
    std::vector<int32_t> pred(b.targets.size());
    for (size_t i = 0; i < pred.size(); ++i) pred[i] = b.targets[i] >= 0 ? b.targets[i] : 0;
    TaskScore s = score_predictions(b, pred);
    CHECK(s.counted == 4 * 4);
    CHECK(s.correct == 16);
    CHECK(s.exact_match() == 1.0);
    // One wrong token in row 2: 15/16 tokens, 3/4 rows.
    for (int64_t t = 0; t < 9; ++t)
        if (b.targets[static_cast<size_t>(2 * 9 + t)] >= 0) {
            pred[static_cast<size_t>(2 * 9 + t)] = (b.targets[static_cast<size_t>(2 * 9 + t)] + 1) % 6;
            break;
        }
    s = score_predictions(b, pred);
    CHECK(s.correct == 15);
    CHECK(s.rows_exact == 3);
    CHECK(s.rows == 4);
    // argmax takes the first index on ties, as torch.argmax does.
    const std::vector<float> logits = {0, 2, 2, 1, /**/ 5, -1, 0, 0};
    CHECK(argmax_rows(logits.data(), 2, 4) == std::vector<int32_t>{1, 0});
}
