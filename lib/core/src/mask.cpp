// Masks: causal, key padding, custom boolean and additive (see attn/core/mask.hpp).
#include "attn/core/mask.hpp"

#include <algorithm>
#include <charconv>
#include <vector>

#include <fmt/format.h>

#include "attn/core/errors.hpp"

namespace attn {

Mask Mask::make_causal() {
    Mask m;
    m.causal = true;
    return m;
}

Mask Mask::key_padding(std::vector<int64_t> lengths) {
    for (int64_t L : lengths)
        if (L < 0) throw InputError(fmt::format("key padding length {} is negative", L));
    Mask m;
    m.key_len = std::move(lengths);
    return m;
}

Mask Mask::key_padding_bool(int64_t B, int64_t Tk, const std::vector<uint8_t>& keep) {
    if (static_cast<int64_t>(keep.size()) != B * Tk)
        throw ShapeError(fmt::format("key padding mask needs [{}, {}] = {} entries, got {}", B, Tk, B * Tk, keep.size()));
    // Stored as a dense [B, 1, Tk] mask: Tq = 1 broadcasts over every query, like PyTorch's [B, 1, T].
    Mask m;
    m.Bm = B;
    m.Tq = 1;
    m.Tk = Tk;
    m.dense.assign(keep.begin(), keep.end());
    for (auto& v : m.dense) v = v ? 1 : 0;
    return m;
}

Mask Mask::custom(int64_t B, int64_t Tq_, int64_t Tk_, std::vector<uint8_t> allowed_) {
    if (B < 1 || Tq_ < 1 || Tk_ < 1 || static_cast<int64_t>(allowed_.size()) != B * Tq_ * Tk_)
        throw ShapeError(fmt::format("custom mask [{}, {}, {}] needs {} entries, got {}", B, Tq_, Tk_,
                                     B * Tq_ * Tk_, allowed_.size()));
    Mask m;
    m.Bm = B;
    m.Tq = Tq_;
    m.Tk = Tk_;
    m.dense = std::move(allowed_);
    for (auto& v : m.dense) v = v ? 1 : 0;
    return m;
}

Mask Mask::additive_mask(int64_t B, int64_t Tq_, int64_t Tk_, std::vector<float> add) {
    if (B < 1 || Tq_ < 1 || Tk_ < 1 || static_cast<int64_t>(add.size()) != B * Tq_ * Tk_)
        throw ShapeError(fmt::format("additive mask [{}, {}, {}] needs {} entries, got {}", B, Tq_, Tk_,
                                     B * Tq_ * Tk_, add.size()));
    Mask m;
    m.Ba = B;
    m.Tqa = Tq_;
    m.Tk = Tk_;
    m.additive = std::move(add);
    return m;
}

// Elementwise op over two [B?, Tq?, Tk] arrays that broadcast (dims of 1 stretch).
template <class V, class Op>
static V broadcast_op(const V& a, int64_t Ba, int64_t Tqa, const V& b, int64_t Bb, int64_t Tqb, int64_t Tk,
                      int64_t& Bo, int64_t& Tqo, Op op) {
    if (Ba != Bb && Ba != 1 && Bb != 1) throw ShapeError(fmt::format("combining masks for batches {} and {}", Ba, Bb));
    if (Tqa != Tqb && Tqa != 1 && Tqb != 1)
        throw ShapeError(fmt::format("combining masks over {} and {} queries", Tqa, Tqb));
    Bo = std::max(Ba, Bb);
    Tqo = std::max(Tqa, Tqb);
    V out(static_cast<size_t>(Bo * Tqo * Tk));
    for (int64_t bi = 0; bi < Bo; ++bi)
        for (int64_t i = 0; i < Tqo; ++i)
            for (int64_t j = 0; j < Tk; ++j) {
                const auto x = a[static_cast<size_t>(((Ba == 1 ? 0 : bi) * Tqa + (Tqa == 1 ? 0 : i)) * Tk + j)];
                const auto y = b[static_cast<size_t>(((Bb == 1 ? 0 : bi) * Tqb + (Tqb == 1 ? 0 : i)) * Tk + j)];
                out[static_cast<size_t>((bi * Tqo + i) * Tk + j)] = op(x, y);
            }
    return out;
}

Mask Mask::combined(const Mask& o) const {
    Mask m = *this;
    m.causal = causal || o.causal;
    if (!o.key_len.empty()) {
        if (m.key_len.empty()) m.key_len = o.key_len;
        else {
            if (m.key_len.size() != o.key_len.size())
                throw ShapeError("combining key padding masks of different batch sizes");
            for (size_t b = 0; b < m.key_len.size(); ++b) m.key_len[b] = std::min(m.key_len[b], o.key_len[b]);
        }
    }
    const bool has_k = !dense.empty() || !additive.empty();
    const bool o_has_k = !o.dense.empty() || !o.additive.empty();
    if (has_k && o_has_k && Tk != o.Tk)
        throw ShapeError(fmt::format("combining masks over {} and {} keys", Tk, o.Tk));
    if (!has_k) m.Tk = o.Tk;
    if (!o.dense.empty()) {
        if (m.dense.empty()) {
            m.dense = o.dense;
            m.Bm = o.Bm;
            m.Tq = o.Tq;
        } else {
            m.dense = broadcast_op(dense, Bm, Tq, o.dense, o.Bm, o.Tq, m.Tk, m.Bm, m.Tq,
                                   [](uint8_t x, uint8_t y) -> uint8_t { return x & y; });
        }
    }
    if (!o.additive.empty()) {
        if (m.additive.empty()) {
            m.additive = o.additive;
            m.Ba = o.Ba;
            m.Tqa = o.Tqa;
        } else {
            m.additive = broadcast_op(additive, Ba, Tqa, o.additive, o.Ba, o.Tqa, m.Tk, m.Ba, m.Tqa,
                                      [](float x, float y) { return x + y; });
        }
    }
    return m;
}

void Mask::check(int64_t B, int64_t Tq_, int64_t Tk_) const {
    if (!key_len.empty()) {
        if (static_cast<int64_t>(key_len.size()) != B)
            throw ShapeError(fmt::format("key padding mask has {} lengths for a batch of {}", key_len.size(), B));
        for (int64_t L : key_len)
            if (L < 0 || L > Tk_) throw ShapeError(fmt::format("key padding length {} is outside [0, {}]", L, Tk_));
    }
    if (!dense.empty() && ((Bm != 1 && Bm != B) || (Tq != 1 && Tq != Tq_) || Tk != Tk_))
        throw ShapeError(fmt::format("boolean mask [{}, {}, {}] does not broadcast to scores [{}, H, {}, {}]", Bm, Tq,
                                     Tk, B, Tq_, Tk_));
    if (!additive.empty() && ((Ba != 1 && Ba != B) || (Tqa != 1 && Tqa != Tq_) || Tk != Tk_))
        throw ShapeError(fmt::format("additive mask [{}, {}, {}] does not broadcast to scores [{}, H, {}, {}]", Ba, Tqa,
                                     Tk, B, Tq_, Tk_));
}

std::string Mask::describe() const {
    std::vector<std::string> parts;
    if (causal) parts.push_back("causal");
    if (!key_len.empty()) parts.push_back(fmt::format("key padding (lengths {})", fmt::join(key_len, ",")));
    if (!dense.empty()) parts.push_back(fmt::format("boolean [{}, {}, {}]", Bm, Tq, Tk));
    if (!additive.empty()) parts.push_back(fmt::format("additive [{}, {}, {}]", Ba, Tqa, Tk));
    if (parts.empty()) return "none";
    return fmt::format("{}", fmt::join(parts, " + "));
}

int64_t Mask::allowed_count(int64_t b, int64_t i, int64_t Tk_) const {
    int64_t n = 0;
    for (int64_t j = 0; j < Tk_; ++j) n += allowed(b, i, j) ? 1 : 0;
    return n;
}

static std::vector<int64_t> parse_lengths(std::string_view list, std::string_view spec, int64_t B, int64_t T) {
    std::vector<int64_t> out;
    size_t pos = 0;
    while (true) {
        const size_t comma = list.find(',', pos);
        const std::string_view item = list.substr(pos, comma == std::string_view::npos ? list.size() - pos : comma - pos);
        int64_t v = 0;
        auto [p, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
        if (item.empty() || ec != std::errc() || p != item.data() + item.size())
            throw InputError(fmt::format("--mask: '{}' has a padding length '{}' that is not an integer "
                                         "(expected pad:L1,L2,... with one length per batch row)", spec, item));
        if (v < 0 || v > T)
            throw InputError(fmt::format("--mask: padding length {} is out of range [0, {}] (T = --seq = {})", v, T, T));
        out.push_back(v);
        if (comma == std::string_view::npos) break;
        pos = comma + 1;
    }
    if (static_cast<int64_t>(out.size()) != B)
        throw InputError(fmt::format("--mask: '{}' gives {} padding length(s) but the batch has {} rows (--batch)", spec,
                                     out.size(), B));
    return out;
}

Mask parse_mask(std::string_view spec, int64_t B, int64_t T) {
    if (spec == "none") return Mask::none();
    if (spec == "causal") return Mask::make_causal();
    std::string_view rest = spec;
    bool causal = false;
    if (rest.substr(0, 7) == "causal+") {
        causal = true;
        rest.remove_prefix(7);
    }
    if (rest.substr(0, 4) == "pad:") {
        rest.remove_prefix(4);
        Mask m = Mask::key_padding(parse_lengths(rest, spec, B, T));
        m.causal = causal;
        return m;
    }
    throw InputError(fmt::format("--mask: unknown mask '{}' (one of: none, causal, pad:L1,L2,..., causal+pad:L1,L2,...)",
                                 spec));
}

}  // namespace attn
