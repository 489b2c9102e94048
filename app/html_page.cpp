// --html FILE: attention weights as an interactive page (html_page.hpp).
#include "html_page.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "attn/core/errors.hpp"
#include "attn/core/tensor.hpp"
#include "attn/model/heads.hpp"
#include "lang_option.hpp"

namespace attn::cli {

void add_html_options(CLI::App& sub, HtmlOpts& o) {
    sub.add_option("--html", o.file,
                   "write the weights as one self-contained interactive page (head, model and matrix views) to FILE");
    add_lang_option(sub, o.lang, "language of the --html page");
}

AttentionPage page_from_dump(const Dump& d, const std::string& source, int64_t batch) {
    AttentionPage p;
    p.source = source;
    const Tensor* w = nullptr;
    int64_t B = 0;
    if (auto it = d.tensors.find("weights"); it != d.tensors.end() && it->second.rank() == 4) {
        w = &it->second;
        B = w->dim(0);
        p.layers = 1, p.heads = w->dim(1), p.tq = w->dim(2), p.tk = w->dim(3);
    } else if (auto at = d.tensors.find("attention"); at != d.tensors.end() && at->second.rank() == 5) {
        w = &at->second;
        B = w->dim(1);
        p.layers = w->dim(0), p.heads = w->dim(2), p.tq = w->dim(3), p.tk = w->dim(4);
    } else {
        throw InputError(
            fmt::format("--html: {}: no \"weights\" [B, H, Tq, Tk] and no \"attention\" [layers, B, H, T, T]", source));
    }
    if (p.tq < 1 || p.tk < 1 || p.heads < 1 || p.layers < 1)
        throw InputError(fmt::format("--html: {}: the weights {} are empty", source, shape_str(w->shape)));
    if (batch < 0 || batch >= B)
        throw InputError(fmt::format("--batch: must be in 0..{} for {} (B = {}), got {}", B - 1, source, B, batch));
    const int64_t H = p.heads, Tq = p.tq, Tk = p.tk, per = H * Tq * Tk;
    // attn train --dump: "weights" is one layer, "weights_layer0", "weights_layer1", ... are all of them
    std::vector<const Tensor*> layers;
    if (p.layers == 1)
        for (auto it = d.tensors.find("weights_layer0"); it != d.tensors.end() && it->second.shape == w->shape;
             it = d.tensors.find(fmt::format("weights_layer{}", layers.size())))
            layers.push_back(&it->second);
    if (!layers.empty()) p.layers = static_cast<int64_t>(layers.size());
    p.weights.resize(static_cast<size_t>(p.layers * per));
    for (int64_t l = 0; l < p.layers; ++l) {
        const float* src =
            layers.empty() ? w->ptr() + (l * B + batch) * per : layers[static_cast<size_t>(l)]->ptr() + batch * per;
        std::copy(src, src + per, p.weights.begin() + l * per);
    }
    // the tokens: config "tokens" [T] or [B][T] strings, used when they fit
    auto tokens_of = [&](int64_t n) -> std::vector<std::string> {
        if (!d.config.is_object() || !d.config.contains("tokens")) return {};
        const auto& tok = d.config["tokens"];
        if (!tok.is_array() || tok.empty()) return {};
        const nlohmann::json* row = &tok;
        if (tok[0].is_array()) {
            if (batch >= static_cast<int64_t>(tok.size())) return {};
            row = &tok[static_cast<size_t>(batch)];
        }
        if (static_cast<int64_t>(row->size()) != n) return {};
        std::vector<std::string> out;
        for (const auto& t : *row) {
            if (!t.is_string()) return {};
            out.push_back(t.get<std::string>());
        }
        return out;
    };
    p.q_tokens = tokens_of(Tq);
    p.k_tokens = Tq == Tk ? p.q_tokens : std::vector<std::string>{};
    // the boolean mask of batch row `batch`: [B|1, Tq, Tk] or per head [B|1, H, Tq, Tk]
    if (auto it = d.tensors.find("mask"); it != d.tensors.end()) {
        const Tensor& m = it->second;
        const bool shared = m.rank() == 3 && m.dim(1) == Tq && m.dim(2) == Tk;
        const bool per_head = m.rank() == 4 && m.dim(1) == H && m.dim(2) == Tq && m.dim(3) == Tk;
        if ((shared || per_head) && (m.dim(0) == B || m.dim(0) == 1)) {
            const int64_t n = (per_head ? H : 1) * Tq * Tk, b = m.dim(0) == 1 ? 0 : batch;
            p.allowed.resize(static_cast<size_t>(n));
            for (int64_t i = 0; i < n; ++i)
                p.allowed[static_cast<size_t>(i)] = m.data[static_cast<size_t>(b * n + i)] != 0.0f;
        }
    }
    // the scaled, masked scores (what softmax saw), for the hover
    if (auto it = d.tensors.find("scores_masked"); it != d.tensors.end() && p.layers == 1 &&
                                                   it->second.shape == w->shape) {
        const float* src = it->second.ptr() + batch * per;
        p.scores.assign(src, src + per);
    }
    // ||v_j|| per head for the norm-based view: V is [B, H_kv, Tk, Dv], head h reads kv head h / (H / H_kv)
    if (auto it = d.tensors.find("V"); it != d.tensors.end() && p.layers == 1 && it->second.rank() == 4) {
        const Tensor& v = it->second;
        const int64_t hkv = v.dim(1), dv = v.dim(3);
        if (v.dim(0) == B && v.dim(2) == Tk && hkv >= 1 && H % hkv == 0) {
            p.value_norms.resize(static_cast<size_t>(H * Tk));
            for (int64_t h = 0; h < H; ++h)
                for (int64_t j = 0; j < Tk; ++j) {
                    const float* row = v.ptr() + ((batch * hkv + h / (H / hkv)) * Tk + j) * dv;
                    double s = 0;
                    for (int64_t c = 0; c < dv; ++c) s += double(row[c]) * row[c];
                    p.value_norms[static_cast<size_t>(h * Tk + j)] = static_cast<float>(std::sqrt(s));
                }
        }
    }
    for (const auto& name : d.order)
        if (auto it = d.tensors.find(name); it != d.tensors.end())
            p.shapes.emplace_back(name, shape_str(it->second.shape));
    for (const auto& [name, t] : d.tensors)  // a dump read back from a file: the rest, by name
        if (std::find(d.order.begin(), d.order.end(), name) == d.order.end())
            p.shapes.emplace_back(name, shape_str(t.shape));
    p.title = p.layers > 1 ? fmt::format("Attention weights: {} layers x {} heads", p.layers, H)
                           : fmt::format("Attention weights: {} heads", H);
    p.subtitle = fmt::format("batch row {} of {}; {} queries x {} keys", batch, B, Tq, Tk);
    if (d.config.is_object() && d.config.contains("text") && d.config["text"].is_string())
        p.subtitle = d.config["text"].get<std::string>();
    return p;
}

AttentionPage page_from_dump_rows(const Dump& d, const std::string& source) {
    AttentionPage p = page_from_dump(d, source, 0);
    const auto it = d.tensors.find("weights");
    const int64_t B = it != d.tensors.end() && it->second.rank() == 4 ? it->second.dim(0) : 1;
    if (B == 1) return p;
    std::vector<AttentionPage> rows;
    for (int64_t b = 1; b < B; ++b) {
        rows.push_back(page_from_dump(d, source, b));
        const AttentionPage& r = rows.back();
        // one set of tokens and the same parts in every row, or the page keeps row 0
        if (r.q_tokens != p.q_tokens || r.k_tokens != p.k_tokens || r.scores.empty() != p.scores.empty() ||
            r.allowed.size() != p.allowed.size() || r.value_norms.size() != p.value_norms.size())
            return p;
    }
    for (const AttentionPage& r : rows) {
        p.weights.insert(p.weights.end(), r.weights.begin(), r.weights.end());
        p.scores.insert(p.scores.end(), r.scores.begin(), r.scores.end());
        p.allowed.insert(p.allowed.end(), r.allowed.begin(), r.allowed.end());
        p.value_norms.insert(p.value_norms.end(), r.value_norms.begin(), r.value_norms.end());
    }
    p.batches = B;
    p.subtitle = fmt::format("{} batch rows (choose one above); {} queries x {} keys", B, p.tq, p.tk);
    return p;
}

AttentionPage page_from_model(const std::vector<Tensor>& attentions, const std::vector<Tensor>& values,
                              const std::vector<std::string>& tokens, const Mask& mask) {
    AttentionPage p;
    const int64_t L = static_cast<int64_t>(attentions.size());
    if (L == 0) throw InputError("--html: the model recorded no attention");
    const int64_t H = attentions[0].dim(1), T = attentions[0].dim(2), per = H * T * T;
    p.layers = L, p.heads = H, p.tq = p.tk = T;
    p.q_tokens = p.k_tokens = tokens;
    p.weights.resize(static_cast<size_t>(L * per));
    for (int64_t l = 0; l < L; ++l)  // batch row 0 of each (B, H, T, T)
        std::copy(attentions[static_cast<size_t>(l)].data.begin(),
                  attentions[static_cast<size_t>(l)].data.begin() + per, p.weights.begin() + l * per);
    // ||v_j|| of each head's value vectors (B, H, T, Dk), for the norm-based view
    if (static_cast<int64_t>(values.size()) == L) {
        p.value_norms.resize(static_cast<size_t>(L * H * T));
        for (int64_t l = 0; l < L; ++l) {
            const Tensor& v = values[static_cast<size_t>(l)];
            const int64_t dk = v.dim(3);
            for (int64_t h = 0; h < H; ++h)
                for (int64_t j = 0; j < T; ++j) {
                    const float* row = v.ptr() + (h * T + j) * dk;
                    double s = 0;
                    for (int64_t c = 0; c < dk; ++c) s += double(row[c]) * row[c];
                    p.value_norms[static_cast<size_t>((l * H + h) * T + j)] = static_cast<float>(std::sqrt(s));
                }
        }
    }
    // each head's one-line note from the head analysis (attn/model/heads.hpp): where its weight goes
    // ([CLS], [SEP], punctuation: the sinks) and the heads of its layer it nearly duplicates
    const HeadFigures fig = head_figures(attentions, mask);
    for (int64_t l = 0; l < L; ++l) {
        const Sinks s = layer_sinks(attentions[static_cast<size_t>(l)], 0, tokens);
        const auto dups = near_duplicate_heads(fig.similarity[static_cast<size_t>(l)]);
        for (int64_t h = 0; h < H; ++h) {
            double share[4] = {0, 0, 0, 0};  // Cls, Sep, Punct, Other
            for (int64_t j = 0; j < T; ++j)
                share[static_cast<int>(sink_kind(tokens[static_cast<size_t>(j)]))] += s.received.at({h, j});
            std::string note = fmt::format("[CLS] {:.0f}% [SEP] {:.0f}% punct {:.0f}%", 100 * share[0], 100 * share[1],
                                           100 * share[2]);
            for (const auto& d : dups)
                if (d.a == h || d.b == h) note += fmt::format("; like head {}", d.a == h ? d.b : d.a);
            p.head_notes.push_back(note);
        }
    }
    p.shapes.emplace_back("attention (per layer)", shape_str(attentions[0].shape));
    if (!values.empty()) p.shapes.emplace_back("V (per layer)", shape_str(values[0].shape));
    p.title = fmt::format("Attention weights: {} layers x {} heads", L, H);
    return p;
}

void check_html(const HtmlOpts& o) {
    if (o.file.empty()) return;
    if (o.file == "-") throw InputError("--html: needs a file name (the page is never written to standard output)");
    require_writable("--html", o.file);
}

void write_html_page(const HtmlOpts& o, AttentionPage page, const TextOut& text, bool quiet) {
    page.lang = o.lang;
    HtmlStats st;
    const std::string html = attention_html(page, &st);
    with_option("--html", [&] { write_file_atomic(o.file, html); });
    if (!quiet)
        text.print("wrote {} ({:.0f} kB, {} x {} heads, weights as {}, max error {:.1e})\n", o.file,
                   static_cast<double>(st.bytes) / 1000.0, page.layers, page.heads, st.encoding, st.max_weight_error);
}

}  // namespace attn::cli
