// Masks: causal, key padding, custom boolean and additive (see attn/core/mask.hpp).
#include "attn/core/mask.hpp"

#include <algorithm>
#include <initializer_list>
#include <vector>

#include <fmt/format.h>

#include "attn/core/errors.hpp"

namespace attn {

namespace {

// Throws ShapeError unless every dim is at least 1 and `n` values fill them.
void check_values(std::string_view what, std::initializer_list<int64_t> dims, size_t n) {
    int64_t need = 1;
    for (int64_t d : dims) {
        if (d < 1) throw ShapeError(fmt::format("{} [{}]: every dim must be at least 1", what, fmt::join(dims, ", ")));
        need *= d;
    }
    if (static_cast<int64_t>(n) != need)
        throw ShapeError(fmt::format("{} [{}] needs {} entries, got {}", what, fmt::join(dims, ", "), need, n));
}

// "[B, Tq, Tk]", or "[B, H, Tq, Tk]" for a per-head part.
template <class P>
std::string dims(const P& p) {
    if (p.heads == 1) return fmt::format("[{}, {}, {}]", p.batch, p.queries, p.keys);
    return fmt::format("[{}, {}, {}, {}]", p.batch, p.heads, p.queries, p.keys);
}

std::vector<uint8_t> zero_or_one(std::vector<uint8_t> v) {
    for (auto& x : v) x = x != 0 ? 1 : 0;
    return v;
}

}  // namespace

Mask Mask::make_causal() {
    Mask m;
    m.causal_ = true;
    return m;
}

Mask Mask::sliding_window(int64_t w, bool causal) {
    if (w < 1) throw InputError(fmt::format("sliding window width {} must be at least 1", w));
    Mask m;
    m.causal_ = causal;
    m.sparse_.on = true;
    m.sparse_.before = causal ? w - 1 : w / 2;
    m.sparse_.after = causal ? 0 : w / 2;
    m.sparse_.name = fmt::format("sliding window {}", w);
    return m;
}

Mask Mask::strided(int64_t s, bool causal) {
    if (s < 1) throw InputError(fmt::format("stride {} must be at least 1", s));
    Mask m;
    m.causal_ = causal;
    m.sparse_.on = true;
    m.sparse_.before = m.sparse_.after = s - 1;
    m.sparse_.stride = s;
    m.sparse_.name = fmt::format("strided {}", s);
    return m;
}

Mask Mask::global_local(int64_t g, int64_t w, bool causal) {
    if (g < 0) throw InputError(fmt::format("global token count {} must be at least 0", g));
    if (w < 0) throw InputError(fmt::format("local window width {} must be at least 0", w));
    Mask m;
    m.causal_ = causal;
    m.sparse_.on = true;
    m.sparse_.before = m.sparse_.after = w / 2;
    m.sparse_.global = g;
    m.sparse_.name = fmt::format("global {} + local window {}", g, w);
    return m;
}

Mask Mask::key_padding(std::vector<int64_t> lengths) {
    if (lengths.empty()) throw ShapeError("key padding needs one length per batch row, got none");
    for (int64_t L : lengths)
        if (L < 0) throw InputError(fmt::format("key padding length {} is negative", L));
    Mask m;
    m.max_key_len_ = *std::max_element(lengths.begin(), lengths.end());
    m.key_len_ = std::move(lengths);
    return m;
}

Mask Mask::key_padding_bool(int64_t B, int64_t Tk, const std::vector<uint8_t>& keep) {
    check_values("key padding mask", {B, Tk}, keep.size());
    Mask m;
    m.dense_ = {zero_or_one(keep), B, 1, Tk};  // Tq = 1: every query sees the same keys
    return m;
}

Mask Mask::custom(int64_t B, int64_t Tq, int64_t Tk, std::vector<uint8_t> allowed) {
    check_values("custom mask", {B, Tq, Tk}, allowed.size());
    Mask m;
    m.dense_ = {zero_or_one(std::move(allowed)), B, Tq, Tk};
    return m;
}

Mask Mask::additive_mask(int64_t B, int64_t Tq, int64_t Tk, std::vector<float> add) {
    check_values("additive mask", {B, Tq, Tk}, add.size());
    Mask m;
    m.additive_ = {std::move(add), B, Tq, Tk};
    return m;
}

Mask Mask::custom_heads(int64_t B, int64_t H, int64_t Tq, int64_t Tk, std::vector<uint8_t> allowed) {
    check_values("per-head mask", {B, H, Tq, Tk}, allowed.size());
    Mask m;
    m.dense_ = {zero_or_one(std::move(allowed)), B, Tq, Tk, H};
    return m;
}

Mask Mask::additive_heads(int64_t B, int64_t H, int64_t Tq, int64_t Tk, std::vector<float> add) {
    check_values("per-head additive mask", {B, H, Tq, Tk}, add.size());
    Mask m;
    m.additive_ = {std::move(add), B, Tq, Tk, H};
    return m;
}

template <class T>
template <class Op>
Mask::Part<T> Mask::Part<T>::broadcast(const Part& o, Op op) const {
    if (o.empty()) return *this;
    if (empty()) return o;
    Part out{{}, std::max(batch, o.batch), std::max(queries, o.queries), keys, std::max(heads, o.heads)};
    out.values.resize(static_cast<size_t>(out.batch * out.heads * out.queries * keys));
    T* dst = out.values.data();
    for (int64_t b = 0; b < out.batch; ++b)
        for (int64_t h = 0; h < out.heads; ++h)
            for (int64_t i = 0; i < out.queries; ++i, dst += keys) {
                const T* x = values.data() + offset(b, h) + i * query_stride();
                const T* y = o.values.data() + o.offset(b, h) + i * o.query_stride();
                for (int64_t j = 0; j < keys; ++j) dst[j] = op(x[j], y[j]);
            }
    return out;
}

Mask::Extent Mask::extent() const {
    Extent e;
    if (!key_len_.empty()) e.batch = static_cast<int64_t>(key_len_.size());
    const auto pin = [&e](const auto& part) {
        if (part.empty()) return;
        if (part.batch != 1) e.batch = part.batch;  // a dim of 1 broadcasts: it pins nothing
        if (part.queries != 1) e.queries = part.queries;
        if (part.heads != 1) e.heads = part.heads;
        e.keys = part.keys;
    };
    pin(dense_);
    pin(additive_);
    return e;
}

Mask Mask::combined(const Mask& o) const {
    // Each mask's parts agree among themselves; the two masks must agree with each other.
    const Extent a = extent(), b = o.extent();
    const auto clash = [](int64_t x, int64_t y) { return x != 0 && y != 0 && x != y; };
    if (clash(a.batch, b.batch))
        throw ShapeError(fmt::format("combining masks for batches {} and {}", a.batch, b.batch));
    if (clash(a.queries, b.queries))
        throw ShapeError(fmt::format("combining masks over {} and {} queries", a.queries, b.queries));
    if (clash(a.keys, b.keys)) throw ShapeError(fmt::format("combining masks over {} and {} keys", a.keys, b.keys));
    if (clash(a.heads, b.heads)) throw ShapeError(fmt::format("combining masks for {} and {} heads", a.heads, b.heads));

    if (sparse_.on && o.sparse_.on)
        throw InputError(fmt::format("combining two sparse patterns ({} and {}) is not supported", sparse_.name,
                                     o.sparse_.name));
    Mask m;
    m.causal_ = causal_ || o.causal_;
    m.sparse_ = sparse_.on ? sparse_ : o.sparse_;
    m.key_len_ = key_len_.empty() ? o.key_len_ : key_len_;
    if (!key_len_.empty() && !o.key_len_.empty())  // as many as the batch has, both
        for (size_t r = 0; r < key_len_.size(); ++r) m.key_len_[r] = std::min(key_len_[r], o.key_len_[r]);
    if (!m.key_len_.empty()) m.max_key_len_ = *std::max_element(m.key_len_.begin(), m.key_len_.end());
    m.dense_ = dense_.broadcast(o.dense_, [](uint8_t x, uint8_t y) -> uint8_t { return x & y; });
    m.additive_ = additive_.broadcast(o.additive_, [](float x, float y) { return x + y; });
    return m;
}

int64_t Mask::heads() const {
    return std::max(dense_.empty() ? 1 : dense_.heads, additive_.empty() ? 1 : additive_.heads);
}

void Mask::check(int64_t B, int64_t Tq, int64_t Tk) const {
    if (heads() > 1)
        throw ShapeError(fmt::format("a per-head mask ({} heads) cannot be read one row per batch row (this kernel "
                                     "takes one mask row for all heads)",
                                     heads()));
    check(B, heads(), Tq, Tk);
}

void Mask::check(int64_t B, int64_t H, int64_t Tq, int64_t Tk) const {
    if (!key_len_.empty()) {
        if (static_cast<int64_t>(key_len_.size()) != B)
            throw ShapeError(fmt::format("key padding mask has {} lengths for a batch of {}", key_len_.size(), B));
        if (max_key_len_ > Tk)  // lengths are >= 0 by construction
            throw ShapeError(fmt::format("key padding length {} is outside [0, {}]", max_key_len_, Tk));
    }
    if (!dense_.fits(B, H, Tq, Tk))
        throw ShapeError(
            fmt::format("boolean mask {} does not broadcast to scores [{}, {}, {}, {}]", dims(dense_), B, H, Tq, Tk));
    if (!additive_.fits(B, H, Tq, Tk))
        throw ShapeError(fmt::format("additive mask {} does not broadcast to scores [{}, {}, {}, {}]", dims(additive_),
                                     B, H, Tq, Tk));
}

MaskRow Mask::row(int64_t b, int64_t h, int64_t Tk, const uint8_t* dense, const float* additive) const {
    MaskRow r;
    r.causal = causal_;
    r.key_len = key_len_.empty() ? Tk : key_len_[static_cast<size_t>(b)];
    r.sparse = sparse_.on;
    r.before = sparse_.before;
    r.after = sparse_.after;
    r.stride = sparse_.stride;
    r.global = sparse_.global;
    if (!dense_.empty()) {
        r.dense = dense + dense_.offset(b, h);
        r.dense_stride = dense_.query_stride();
    }
    if (!additive_.empty()) {
        r.additive = additive + additive_.offset(b, h);
        r.additive_stride = additive_.query_stride();
    }
    return r;
}

std::string Mask::describe() const {
    std::vector<std::string> parts;
    if (causal_) parts.push_back("causal");
    if (sparse_.on) parts.push_back(sparse_.name);
    if (!key_len_.empty()) parts.push_back(fmt::format("key padding (lengths {})", fmt::join(key_len_, ",")));
    if (!dense_.empty()) parts.push_back("boolean " + dims(dense_));
    if (!additive_.empty()) parts.push_back("additive " + dims(additive_));
    if (parts.empty()) return "none";
    return fmt::format("{}", fmt::join(parts, " + "));
}

}  // namespace attn
