// The exercises of `attn exercise` (attn/check/exercise.hpp).
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "attn/check/exercise.hpp"
#include "attn/core/attention.hpp"
#include "attn/core/errors.hpp"
#include "attn/core/rng.hpp"

namespace attn::check {
namespace {

struct Text {
    const char* what;         // what to compute
    const char* conventions;  // the conventions that matter
    const char* code;         // the skeleton's line(s) of work, in numpy
    const char* hint;         // where to look when nothing of the catalogue matches
    const char* wrong;        // the typical mistake (wrong_answer_id)
};

// In the order of exercises().
const Text kText[] = {
    {"the scaled scores of one head: scores_scaled = Q·Kᵀ / √Dk",
     "row i of the scores belongs to query i, column j to key j; Dk is the width of q and k",
     "scores_scaled = ...  # from Q and K", "a scaled score is q_i·k_j times 1/sqrt(Dk), for every pair (i, j)",
     "no-scale"},
    {"the softmax of each row of the given scores: weights[i, j] = exp(s_ij) / Σ_j' exp(s_ij')",
     "the softmax runs over the last axis (keys); the scores are large, so compute it stably",
     "weights = ...  # softmax of each row of scores", "each row of weights must sum to 1, with no inf or NaN",
     "unstable-softmax"},
    {"the attention weights of one head under a causal mask (query i sees keys j <= i)",
     "scores scaled by 1/√Dk; masked scores are -inf before a softmax over the keys",
     "weights = ...  # scores, scale, causal mask, softmax",
     "row i of weights has i + 1 non-zero entries, summing to 1", "mask-after-softmax"},
    {"the attention weights of a batch of two sequences, the second padded: key j of sequence b is padding "
     "when j >= lengths[b]",
     "scores scaled by 1/√Dk; padding hides keys (columns), for every query; the lengths are in the task below",
     "weights = ...  # (B, T, T): scores, scale, padding mask on the keys, softmax",
     "in sequence b, every row has zeros in the columns j >= lengths[b]", "mask-on-queries"},
    {"the output of one attention head with its projections: Q = x·W_qᵀ + b_q (and K, V alike), then "
     "softmax(Q·Kᵀ/√Dk)·V",
     "nn.Linear stores W as [out, in]: y = x @ W.T + b; no mask", "head_out = ...  # (T, Dv)",
     "check Q = x @ W_q.T + b_q first, then the scores, then the weights", "weight-not-transposed"},
    {"the merged output of two heads: project x to Q, K, V (no biases), split each into H = 2 heads of width "
     "Dk = D/H, attend in each head (scale 1/√Dk, no mask), then merge the heads back to (T, H·Dv)",
     "head h takes columns h·Dk .. (h+1)·Dk of Q; merged[t] is head 0's row t, then head 1's row t",
     "merged = ...  # (T, H*Dv)", "split: Q.reshape(T, H, Dk).transpose(1, 0, 2); merge: the inverse",
     "merge-no-transpose"},
    {"full multi-head attention: projections with biases, H = 2 heads, causal mask, scale 1/√Dk, merge, and the "
     "output projection out = merged·W_oᵀ + b_o",
     "nn.Linear layout [out, in]; heads split as (T, H, Dk) then transposed to (H, T, Dk); causal: key j <= query i",
     "out = ...  # (T, D)", "check each step in turn: Q, the heads, the scores, the weights, the merge",
     "split-no-transpose"},
    {"the gradient of the loss with respect to the scores, dS, from the softmax weights P and their gradient dP: "
     "dS_ij = P_ij (dP_ij - Σ_j' P_ij' dP_ij')",
     "P is softmax(S) over each row; the sum runs along the row (the keys)", "dS = ...  # from P and dP",
     "the softmax Jacobian couples the entries of one row: each row of dS sums to 0", "softmax-grad-no-sum"},
    {"one step of a decoder with a KV cache: append the new k and v to the cache, then attend with the new "
     "query q over all T + 1 keys (scale 1/√Dk, no mask needed: every cached key is in the past)",
     "the cache holds the keys and values of the earlier tokens in order; the new token is the last",
     "out = ...  # (1, Dv)", "the new query must see its own key and value too: T + 1 keys in all",
     "kv-step-no-append"},
    {"RoPE on x: row t sits at position t; dims d and d + Dk/2 form a pair rotated by the angle t·θ_d with "
     "θ_d = base^(-2d/Dk), d < Dk/2 (the rotate-half convention of Llama)",
     "(x_d, x_{d+Dk/2}) -> (x_d cos a - x_{d+Dk/2} sin a, x_d sin a + x_{d+Dk/2} cos a); positions from 0",
     "x_rot = ...  # (T, Dk)", "row 0 (position 0) must come back unchanged", "rope-interleaved"},
    {"grouped-query attention: 4 query heads share 2 key/value heads; query head h reads kv head h // 2; "
     "scale 1/√Dk, no mask",
     "Q is (H, T, Dk), K and V are (H_kv, T, Dk)", "head_out = ...  # (H, T, Dv)",
     "heads 0 and 1 read kv head 0, heads 2 and 3 read kv head 1", "kv-repeat-order"},
    {"the output of the function below, once its bug is found and fixed: one head, causal attention, no biases",
     "the function is meant to compute softmax(mask(Q·Kᵀ/√Dk))·V with a causal mask",
     "head_out = attention(inp['x'], inp['W_q'], inp['W_k'], inp['W_v'])  # after fixing it",
     "look at how the mask is applied: what does a hidden score become?", "mask-zero-fill"},
};

const char* kBuggyCode =
    "def attention(x, W_q, W_k, W_v):\n"
    "    Q, K, V = x @ W_q.T, x @ W_k.T, x @ W_v.T\n"
    "    T, Dk = Q.shape\n"
    "    scores = Q @ K.T / np.sqrt(Dk)\n"
    "    causal = np.tril(np.ones((T, T)))\n"
    "    scores = scores * causal          # hide the future\n"
    "    w = np.exp(scores - scores.max(axis=-1, keepdims=True))\n"
    "    w = w / w.sum(axis=-1, keepdims=True)\n"
    "    return w @ V\n";

Tensor randn(Shape s, uint64_t seed, uint64_t stream, float std = 1.0f, float mean = 0.0f) {
    Tensor t(std::move(s));
    Rng r(seed, stream);
    for (float& v : t.data) v = mean + std * r.normal();
    return t;
}
Tensor uniform(Shape s, uint64_t seed, uint64_t stream, float bound) {
    Tensor t(std::move(s));
    Rng r(seed, stream);
    for (float& v : t.data) v = r.uniform(-bound, bound);
    return t;
}

Arr reshaped(Arr a, Shape s) {
    a.shape = std::move(s);
    return a;
}

Shape without_ones(const Shape& s) {
    Shape out;
    for (int64_t d : s)
        if (d != 1) out.push_back(d);
    return out;
}

const Text& text_of(const ExerciseInfo& e) { return kText[e.number - 1]; }

// The problem of a pipeline exercise (all but 8, 9, 10), in check's layouts.
Problem problem_of(const ExerciseInfo& e, const Dump& d) {
    Problem p;
    const auto& t = d.tensors;
    auto arr = [&](const char* n) { return to_arr(t.at(n)); };
    p.heads = d.config.value("heads", 1);
    p.kv_heads = d.config.value("kv_heads", 0);
    p.mask = parse_mask_spec(d.config.value("mask", std::string("none")));
    if (t.count("x")) {
        p.start = Start::x;
        Arr x = arr("x");
        p.inputs["x"] = reshaped(x, {1, x.shape[0], x.shape[1]});
        for (const char* n : {"W_q", "W_k", "W_v", "W_o", "b_q", "b_k", "b_v", "b_o"})
            if (t.count(n)) p.inputs[n] = arr(n);
    } else if (t.count("scores")) {
        p.start = Start::scores;
        Arr s = arr("scores");
        p.inputs["scores_scaled"] = reshaped(s, {1, 1, s.shape[0], s.shape[1]});
    } else {
        p.start = Start::qkv;
        for (const char* n : {"Q", "K", "V"}) {
            if (!t.count(n)) continue;
            Arr a = arr(n);
            if (e.name == "padding") a = reshaped(a, {a.shape[0], 1, a.shape[1], a.shape[2]});
            else if (a.shape.size() == 2) a = reshaped(a, {1, 1, a.shape[0], a.shape[1]});
            else a = reshaped(a, {1, a.shape[0], a.shape[1], a.shape[2]});
            p.inputs[n] = a;
        }
        if (!t.count("V")) {  // the scores exercise needs no values
            const Arr& K = p.inputs["K"];
            p.inputs["V"] = Arr{K.shape, std::vector<double>(K.v.size(), 0.0)};
        }
        p.heads = p.inputs["Q"].shape[1];
        p.kv_heads = p.inputs["K"].shape[1];
    }
    return p;
}

bool is_pipeline(const ExerciseInfo& e) { return e.number != 8 && e.number != 9 && e.number != 10; }

// softmax-grad: dS from P and dP; `mode` 0 reference, 1 no row sum, 2 the sum over the wrong axis.
Arr softmax_grad(const Arr& P, const Arr& dP, int mode) {
    const int64_t n = P.shape[0], m = P.shape[1];
    Arr dS{P.shape, std::vector<double>(P.v.size())};
    for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < m; ++j) {
            double sum = 0;
            if (mode == 0)
                for (int64_t k = 0; k < m; ++k)
                    sum += P.v[static_cast<size_t>(i * m + k)] * dP.v[static_cast<size_t>(i * m + k)];
            if (mode == 2)
                for (int64_t k = 0; k < n; ++k)
                    sum += P.v[static_cast<size_t>(k * m + j)] * dP.v[static_cast<size_t>(k * m + j)];
            const size_t at = static_cast<size_t>(i * m + j);
            dS.v[at] = P.v[at] * (dP.v[at] - sum);
        }
    return dS;
}

// kv-step: out (1, Dv); `mode` 0 reference, 1 the cache alone (new k, v not appended), 2 unscaled.
Arr kv_step(const Dump& d, int mode) {
    const Arr Kc = to_arr(d.tensors.at("K_cache")), Vc = to_arr(d.tensors.at("V_cache"));
    const Arr q = to_arr(d.tensors.at("q")), k = to_arr(d.tensors.at("k")), v = to_arr(d.tensors.at("v"));
    const int64_t T = Kc.shape[0], Dk = Kc.shape[1], Dv = Vc.shape[1], n = mode == 1 ? T : T + 1;
    Arr K{{n, Dk}, {}}, V{{n, Dv}, {}};
    K.v.assign(Kc.v.begin(), Kc.v.end());
    V.v.assign(Vc.v.begin(), Vc.v.end());
    if (mode != 1) {
        K.v.insert(K.v.end(), k.v.begin(), k.v.end());
        V.v.insert(V.v.end(), v.v.begin(), v.v.end());
    }
    std::vector<double> out(static_cast<size_t>(Dv));
    AttentionSizes s;
    s.B = 1, s.H = 1, s.Tq = 1, s.Tk = n, s.Dk = Dk, s.Dv = Dv;
    AttentionOptions opt;
    if (mode == 2) opt.scale.kind = ScaleKind::None;
    attention_reference<double>(out.data(), q.v.data(), K.v.data(), V.v.data(), s, Mask::none(), opt);
    return Arr{{1, Dv}, out};
}

// rope: `mode` 0 reference (core's rope_rotate), 1 interleaved pairs, 2 the angle negated, 3 positions from 1.
Arr rope(const Dump& d, int mode) {
    Arr x = to_arr(d.tensors.at("x"));
    const double base = d.config.value("rope_base", 10000.0);
    const int64_t T = x.shape[0], Dk = x.shape[1], half = Dk / 2;
    if (mode == 0 || mode == 3) {
        rope_rotate<double>(x.v.data(), 1, T, Dk, mode == 3 ? 1 : 0, base);
        return x;
    }
    Arr y = x;
    for (int64_t t = 0; t < T; ++t)
        for (int64_t c = 0; c < half; ++c) {
            const double a = static_cast<double>(t) *
                             std::pow(base, -2.0 * static_cast<double>(c) / static_cast<double>(Dk)) *
                             (mode == 2 ? -1.0 : 1.0);
            const int64_t i0 = mode == 1 ? 2 * c : c, i1 = mode == 1 ? 2 * c + 1 : c + half;
            const double x0 = x.v[static_cast<size_t>(t * Dk + i0)], x1 = x.v[static_cast<size_t>(t * Dk + i1)];
            y.v[static_cast<size_t>(t * Dk + i0)] = x0 * std::cos(a) - x1 * std::sin(a);
            y.v[static_cast<size_t>(t * Dk + i1)] = x0 * std::sin(a) + x1 * std::cos(a);
        }
    return y;
}

// The reference answer and the candidates (id, answer) of a special exercise (8, 9, 10).
std::vector<std::pair<std::string, Arr>> special_answers(const ExerciseInfo& e, const Dump& d) {
    if (e.number == 8) {
        const Arr P = to_arr(d.tensors.at("P")), dP = to_arr(d.tensors.at("dP"));
        return {{"", softmax_grad(P, dP, 0)}, {"softmax-grad-no-sum", softmax_grad(P, dP, 1)},
                {"softmax-grad-wrong-axis", softmax_grad(P, dP, 2)}};
    }
    if (e.number == 9) return {{"", kv_step(d, 0)}, {"kv-step-no-append", kv_step(d, 1)}, {"no-scale", kv_step(d, 2)}};
    return {{"", rope(d, 0)}, {"rope-interleaved", rope(d, 1)}, {"rope-wrong-direction", rope(d, 2)},
            {"rope-positions-from-one", rope(d, 3)}};
}

Tensor to_tensor(const Arr& a, const Shape& shape) {
    Tensor t(shape);
    for (size_t k = 0; k < a.v.size(); ++k) t.data[k] = static_cast<float>(a.v[k]);
    return t;
}

Arr pipeline_answer(const ExerciseInfo& e, const Dump& d, const std::string& id) {
    const Problem p = problem_of(e, d);
    if (id.empty()) return reference_stages(p).at(e.answer);
    auto st = mistaken_stages(p, id, 0);
    if (!st) throw InputError(fmt::format("exercise {}: the mistake {} does not apply", e.name, id));
    return st->at(e.answer);
}

}  // namespace

const std::vector<ExerciseInfo>& exercises() {
    static const std::vector<ExerciseInfo> all = {
        {1, "scores", "Scores and the 1/√Dk scale", 5, "scores_scaled"},
        {2, "softmax", "A stable softmax", 4, "weights"},
        {3, "causal", "The causal mask", 8, "weights"},
        {4, "padding", "The padding mask", 8, "weights"},
        {5, "one-head", "One head with its projections", 7, "head_out"},
        {6, "split-merge", "Split and merge of heads", 10, "merged"},
        {7, "multi-head", "Full multi-head attention with projections", 10, "out"},
        {8, "softmax-grad", "The gradient of softmax: dS from dP", 16, "dS"},
        {9, "kv-step", "One KV-cache step", 21, "out"},
        {10, "rope", "A RoPE rotation", 19, "x_rot"},
        {11, "gqa", "Grouped-query attention", 18, "head_out"},
        {12, "find-the-bug", "Find the bug in the given code", 13, "head_out"},
    };
    return all;
}

const ExerciseInfo& find_exercise(const std::string& key) {
    for (const ExerciseInfo& e : exercises())
        if (key == e.name || key == std::to_string(e.number)) return e;
    std::string names;
    for (const ExerciseInfo& e : exercises()) names += (names.empty() ? "" : ", ") + e.name;
    throw InputError(
        fmt::format("'{}' is no exercise: give a number 1-{} or a name ({})", key, exercises().size(), names));
}

const std::vector<Mistake>& exercise_mistakes() {
    static const std::vector<Mistake> all = {
        {"softmax-grad-no-sum",
         "dS was taken as P·dP alone: the term -P·Σ(P·dP) of the softmax Jacobian is missing",
         "dS = P * (dP - (P * dP).sum(axis=-1, keepdims=True))", "lesson 16 (backward)"},
        {"softmax-grad-wrong-axis", "the sum Σ P·dP ran over the queries (axis 0) instead of along each row",
         "sum along the row: (P * dP).sum(axis=-1, keepdims=True)", "lesson 16 (backward)"},
        {"kv-step-no-append", "the new token's key and value were not appended: the query attended to the cache alone",
         "K = np.concatenate([K_cache, k]), V likewise, before the scores", "lesson 21 (the KV cache)"},
        {"rope-interleaved", "the pairs were taken as (2d, 2d+1) (the interleaved convention) instead of (d, d + Dk/2)",
         "pair dim d with dim d + Dk/2 (rotate-half)", "lesson 19 (RoPE and ALiBi)"},
        {"rope-wrong-direction", "each pair was rotated by -angle instead of +angle",
         "x_d cos a - x_{d+Dk/2} sin a, x_d sin a + x_{d+Dk/2} cos a", "lesson 19 (RoPE and ALiBi)"},
        {"rope-positions-from-one", "the positions were counted from 1 instead of 0",
         "row t sits at position t, starting at 0 (row 0 is not rotated)", "lesson 19 (RoPE and ALiBi)"},
    };
    return all;
}

Dump exercise_inputs(const ExerciseInfo& e, uint64_t seed) {
    Dump d;
    auto put = [&](const std::string& n, Tensor t) {
        d.tensors[n] = std::move(t);
        d.order.push_back(n);
    };
    nlohmann::json cfg = {{"exercise", e.name}, {"number", e.number}, {"seed", seed}, {"answer", e.answer}};
    const int64_t T = 6;
    switch (e.number) {
        case 1: put("Q", randn({T, 8}, seed, 1)); put("K", randn({T, 8}, seed, 2)); break;
        case 2: put("scores", randn({T, T}, seed, 1, 4.0f, 760.0f)); break;
        case 3: case 11: {
            const bool g = e.number == 11;
            put("Q", randn(g ? Shape{4, T, 4} : Shape{T, 8}, seed, 1));
            put("K", randn(g ? Shape{2, T, 4} : Shape{T, 8}, seed, 2));
            put("V", randn(g ? Shape{2, T, 4} : Shape{T, 8}, seed, 3));
            if (!g) cfg["mask"] = "causal";
            break;
        }
        case 4: {
            put("Q", randn({2, T, 8}, seed, 1));
            put("K", randn({2, T, 8}, seed, 2));
            put("V", randn({2, T, 8}, seed, 3));
            Rng r(seed, 4);
            cfg["mask"] = fmt::format("pad:{},{}", 2 + static_cast<int>(r.next_u64() % 4), T);
            break;
        }
        case 5: case 6: case 7: case 12: {
            const int64_t D = e.number == 7 ? 16 : 8;
            const float bound = 1.0f / std::sqrt(static_cast<float>(D));
            put("x", randn({T, D}, seed, 1));
            uint64_t stream = 2;
            for (const char* w : {"W_q", "W_k", "W_v"}) put(w, uniform({D, D}, seed, stream++, bound));
            if (e.number == 7) put("W_o", uniform({D, D}, seed, stream++, bound));
            if (e.number == 5 || e.number == 7)
                for (const char* b : {"b_q", "b_k", "b_v", "b_o"})
                    if (b[2] != 'o' || e.number == 7) put(b, uniform({D}, seed, stream++, bound));
            cfg["heads"] = e.number == 6 || e.number == 7 ? 2 : 1;
            if (e.number == 7 || e.number == 12) cfg["mask"] = "causal";
            break;
        }
        case 8: {
            Tensor P = randn({T, T}, seed, 1, 2.0f);
            softmax_rows(P.ptr(), T, T);
            put("P", P);
            put("dP", randn({T, T}, seed, 2));
            break;
        }
        case 9:
            put("K_cache", randn({5, 8}, seed, 1));
            put("V_cache", randn({5, 8}, seed, 2));
            put("q", randn({1, 8}, seed, 3));
            put("k", randn({1, 8}, seed, 4));
            put("v", randn({1, 8}, seed, 5));
            break;
        default:
            put("x", randn({T, 8}, seed, 1));
            cfg["rope_base"] = 10000.0;
            break;
    }
    if (is_pipeline(e)) cfg["scale"] = "sqrt";
    d.seed = seed;
    d.config = cfg;
    d.config["answer_shape"] = answer_shape(e, d);
    return d;
}

Shape answer_shape(const ExerciseInfo& e, const Dump& d) {
    if (!is_pipeline(e)) return special_answers(e, d)[0].second.shape;
    Shape s = without_ones(pipeline_answer(e, d, "").shape);
    if (e.number == 4) s = {2, 6, 6};  // (B, T, T): the head axis of one head is left out
    return s;
}

Tensor reference_answer(const ExerciseInfo& e, const Dump& d) {
    const Arr a = is_pipeline(e) ? pipeline_answer(e, d, "") : special_answers(e, d)[0].second;
    return to_tensor(a, answer_shape(e, d));
}

std::string wrong_answer_id(const ExerciseInfo& e) { return text_of(e).wrong; }

Tensor wrong_answer(const ExerciseInfo& e, const Dump& d) {
    const std::string id = wrong_answer_id(e);
    if (is_pipeline(e)) return to_tensor(pipeline_answer(e, d, id), answer_shape(e, d));
    for (const auto& [cid, a] : special_answers(e, d))
        if (cid == id) return to_tensor(a, answer_shape(e, d));
    throw InputError(fmt::format("exercise {}: no wrong answer {}", e.name, id));
}

CheckReport grade_exercise(const ExerciseInfo& e, const Dump& d, const Tensor& answer, bool f64,
                           const std::string& what) {
    const Shape want = answer_shape(e, d);
    if (answer.numel() != shape_numel(want) || without_ones(answer.shape) != without_ones(want))
        throw InputError(fmt::format("{}: shape {} is not the answer's: {} is {}", what, shape_str(answer.shape),
                                     e.answer, shape_str(want)));
    std::map<std::string, Arr> ref, learner;
    std::vector<Candidate> cands;
    if (is_pipeline(e)) {
        Problem p = problem_of(e, d);
        p.f64 = f64;
        ref[e.answer] = reference_stages(p).at(e.answer);
        for (const Mistake& m : catalogue())
            for (int f = 0; f < mistake_forms(m.id); ++f)
                if (auto st = mistaken_stages(p, m.id, f)) cands.push_back({m.id, {{e.answer, st->at(e.answer)}}});
    } else {
        for (const auto& [id, a] : special_answers(e, d)) {
            if (id.empty()) ref[e.answer] = a;
            else cands.push_back({id, {{e.answer, a}}});
        }
    }
    ref[e.answer].shape = want;  // as the task states it; compare() reads (1, 1, T, T) as (T, T)
    learner[e.answer] = to_arr(answer);
    CheckReport r = compare_stages({e.answer}, ref, learner, cands, f64);
    for (Diagnosis& dg : r.diagnosis) {
        bool done = false;
        for (const Mistake& m : exercise_mistakes())
            if (m.id == dg.id) {
                dg.text = diagnosis_text(m);
                done = true;
            }
        if (!done) dg.text = diagnosis_text(mistake(dg.id));
    }
    return r;
}

std::string exercise_hint(const ExerciseInfo& e, const CheckReport& r) {
    if (r.first_divergence.empty()) return "";
    return fmt::format("hint: {}", text_of(e).hint);
}

std::string exercise_task(const ExerciseInfo& e, const Dump& d, const std::string& inputs_file,
                          const std::string& answer_file) {
    const Text& t = text_of(e);
    std::string s = fmt::format("# Exercise {} · {}\n\n(lesson {} of `attn tour`: `attn lesson {}`)\n\n", e.number,
                                e.title, e.lesson, e.lesson);
    s += fmt::format("Compute {}.\n\nConventions: {}.\n\n", t.what, t.conventions);
    s += fmt::format("Inputs, in {} (float32):\n\n", inputs_file);
    for (const std::string& n : d.order) s += fmt::format("- `{}` {}\n", n, shape_str(d.tensors.at(n).shape));
    std::string settings;
    for (const char* k : {"heads", "kv_heads", "mask", "scale", "rope_base"})
        if (d.config.contains(k))
            settings += fmt::format("{}{} = {}", settings.empty() ? "" : ", ", k, d.config[k].dump());
    if (!settings.empty()) s += fmt::format("\nSettings: {} (also in the file's metadata).\n", settings);
    s += fmt::format("\nYour answer: `{}`, shape {}, float32 or float64, saved with np.save as {}.\n\n", e.answer,
                     shape_str(answer_shape(e, d)), answer_file);
    if (e.number == 12) s += fmt::format("The code, with its bug:\n\n```python\n{}```\n\n", kBuggyCode);
    s += "```python\nimport numpy as np\n\n";
    s += fmt::format("inp = np.load(\"{}\")\n", inputs_file);
    for (const std::string& n : d.order)
        s += fmt::format("{} = inp[\"{}\"]\n", n == "K_cache" || n == "V_cache" ? n : n, n);
    if (e.number == 12) s += "\n" + std::string(kBuggyCode);
    s += fmt::format("\n{}\n\nnp.save(\"{}\", {})\n```\n\n", t.code, answer_file, e.answer);
    s += fmt::format("Check it: `attn exercise {} --check {} --seed {}`\n", e.name, answer_file, d.seed);
    return s;
}

}  // namespace attn::check
