// Reading a model's attention heads: entropy and look-alike heads, attention
// sinks, the probe (see attn/model/heads.hpp).
#include "attn/model/heads.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "attn/core/errors.hpp"
#include "attn/core/stats.hpp"
#include "attn/core/utf8.hpp"
#include "attn/model/tokenizer.hpp"

namespace attn {

HeadFigures head_figures(const std::vector<Tensor>& attentions, const Mask& mask) {
    HeadFigures f;
    for (const Tensor& w : attentions) {
        std::vector<double> e;
        for (const HeadStats& s : head_stats(w, mask)) e.push_back(s.mean_normalized_entropy);
        f.entropy.push_back(std::move(e));
        f.similarity.push_back(head_similarity(w, mask));
    }
    return f;
}

std::vector<HeadPair> head_pairs(const Tensor& sim) {
    if (sim.rank() != 2 || sim.dim(0) != sim.dim(1))
        throw ShapeError(fmt::format("head_pairs: the similarity must be (H, H), got {}", shape_str(sim.shape)));
    const int64_t H = sim.dim(0);
    std::vector<HeadPair> out;
    for (int64_t a = 0; a < H; ++a)
        for (int64_t b = a + 1; b < H; ++b) out.push_back({a, b, sim.data[static_cast<size_t>(a * H + b)]});
    std::stable_sort(out.begin(), out.end(), [](const HeadPair& x, const HeadPair& y) { return x.js < y.js; });
    return out;
}

std::vector<HeadPair> near_duplicate_heads(const Tensor& sim, double threshold) {
    std::vector<HeadPair> out = head_pairs(sim);
    out.erase(std::find_if(out.begin(), out.end(), [&](const HeadPair& p) { return !(p.js < threshold); }), out.end());
    return out;
}

SinkKind sink_kind(std::string_view token) {
    if (token == "[CLS]") return SinkKind::Cls;
    if (token == "[SEP]") return SinkKind::Sep;
    const std::u32string u = utf8_decode(token);
    return u.size() == 1 && is_bert_punctuation(u[0]) ? SinkKind::Punct : SinkKind::Other;
}

Tensor mean_received(const Tensor& w, int64_t b, int64_t len) {
    // w (B, H, T, T) -> (H, T)
    if (w.rank() != 4 || b < 0 || b >= w.dim(0) || len < 1 || len > w.dim(2))
        throw ShapeError(fmt::format("mean_received: row {} with {} tokens of weights {}", b, len, shape_str(w.shape)));
    const int64_t H = w.dim(1), T = w.dim(2);
    Tensor r({H, T});
    for (int64_t h = 0; h < H; ++h)
        for (int64_t i = 0; i < len; ++i) {
            const float* row = w.ptr() + ((b * H + h) * T + i) * T;
            for (int64_t j = 0; j < T; ++j) r.data[static_cast<size_t>(h * T + j)] += row[j] / static_cast<float>(len);
        }
    return r;
}

Sinks layer_sinks(const Tensor& w, int64_t b, const std::vector<std::string>& tokens) {
    // w (B, H, T, T) -> received (H, T) -> per_key (len)
    const int64_t len = static_cast<int64_t>(tokens.size());
    Sinks s;
    s.received = mean_received(w, b, len);
    const int64_t H = s.received.dim(0);
    s.per_key.assign(static_cast<size_t>(len), 0.0);
    for (int64_t h = 0; h < H; ++h)
        for (int64_t j = 0; j < len; ++j)
            s.per_key[static_cast<size_t>(j)] += s.received.at({h, j}) / static_cast<double>(H);
    for (size_t j = 0; j < s.per_key.size(); ++j) {
        switch (sink_kind(tokens[j])) {
            case SinkKind::Cls: s.cls += s.per_key[j]; break;
            case SinkKind::Sep: s.sep += s.per_key[j]; break;
            case SinkKind::Punct: s.punct += s.per_key[j]; break;
            case SinkKind::Other: s.other += s.per_key[j]; break;
        }
    }
    s.top = static_cast<size_t>(std::max_element(s.per_key.begin(), s.per_key.end()) - s.per_key.begin());
    return s;
}

std::vector<ProbeRow> probe_heads(const std::vector<Tensor>& attentions, int64_t b, const std::vector<int64_t>& from,
                                  const std::vector<std::vector<int64_t>>& to) {
    // each attentions[l] (B, H, T, T): query rows `from`, key columns `to[c]`
    std::vector<ProbeRow> rows;
    if (from.empty()) throw InputError("probe: no query tokens");
    for (size_t l = 0; l < attentions.size(); ++l) {
        const Tensor& w = attentions[l];
        const int64_t H = w.dim(1), T = w.dim(2);
        auto check = [&](int64_t t) {
            if (t < 0 || t >= T) throw ShapeError(fmt::format("probe: token {} outside T = {}", t, T));
        };
        for (int64_t f : from) check(f);
        for (const auto& g : to)
            for (int64_t t : g) check(t);
        for (int64_t h = 0; h < H; ++h) {
            ProbeRow r;
            r.layer = static_cast<int64_t>(l);
            r.head = h;
            for (const auto& g : to) {
                double acc = 0;
                for (int64_t f : from)
                    for (int64_t t : g) acc += w.data[static_cast<size_t>(((b * H + h) * T + f) * T + t)];
                r.weight.push_back(acc / static_cast<double>(from.size()));
            }
            rows.push_back(std::move(r));
        }
    }
    return rows;
}

size_t preferred_candidate(const ProbeRow& r) {
    return static_cast<size_t>(std::max_element(r.weight.begin(), r.weight.end()) - r.weight.begin());
}

ProbeRanking rank_probe(std::vector<ProbeRow> rows) {
    ProbeRanking out;
    const size_t C = rows.empty() ? 0 : rows.front().weight.size();
    out.mean_weight.assign(C, 0.0);
    out.heads_preferring.assign(C, 0);
    for (const ProbeRow& r : rows) {
        if (r.weight.size() != C) throw ShapeError("probe: rows with different numbers of candidates");
        if (C == 0) continue;
        ++out.heads_preferring[preferred_candidate(r)];
        for (size_t c = 0; c < C; ++c) out.mean_weight[c] += r.weight[c] / static_cast<double>(rows.size());
    }
    if (C > 0)
        std::stable_sort(rows.begin(), rows.end(),
                         [](const ProbeRow& a, const ProbeRow& b) { return a.weight[0] > b.weight[0]; });
    out.rows = std::move(rows);
    return out;
}

}  // namespace attn
