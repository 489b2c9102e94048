// The schema of a dump's config and mask tensors (attn/io/dump_config.hpp).
#include "attn/io/dump_config.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <tuple>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "attn/core/dropout.hpp"
#include "attn/core/errors.hpp"

namespace attn {

std::string tensor_element(std::string_view name, const Tensor& t, size_t k) {
    std::vector<int64_t> index(t.shape.size());
    for (size_t d = index.size(), rest = k; d-- > 0;) {
        index[d] = static_cast<int64_t>(rest % static_cast<size_t>(t.shape[d]));
        rest /= static_cast<size_t>(t.shape[d]);
    }
    return fmt::format("{}[{}] = {}", name, fmt::join(index, ", "), t.data[k]);
}

namespace {

// Keys the layer is read from, and keys --dump writes for the record only.
constexpr std::string_view kRead[] = {"batch",    "seq",   "d_model", "heads",   "d_k",  "d_v",
                                      "kv_heads", "scale", "fill",    "init",    "rope", "alibi",
                                      "softcap",  "bias",  "train",   "dropout", "mask"};
constexpr std::string_view kRecord[] = {"impl", "backward", "window",    "mask_file", "tk",
                                        "kdim", "vdim",     "generator", "source",    "seed"};

InputError field_error(std::string_view key, std::string_view rule) {
    return InputError(fmt::format("config.{}: {}", key, rule));
}

}  // namespace

DumpLayerConfig read_dump_config(const Dump& d) {
    const nlohmann::json& c = d.config;
    DumpLayerConfig out;
    if (!c.is_object()) throw InputError(fmt::format("config: must be a JSON object, got a JSON {}", c.type_name()));
    for (const auto& [key, value] : c.items())
        if (std::ranges::find(kRead, key) == std::end(kRead) && std::ranges::find(kRecord, key) == std::end(kRecord))
            throw field_error(key,
                              "is not a setting attn forward reads (batch, seq, d_model, heads, d_k, d_v, kv_heads, "
                              "scale, fill, init, rope, alibi, softcap, bias, train, dropout, mask)");

    auto text = [&](const char* key, std::optional<std::string>& v) {
        if (!c.contains(key)) return;
        if (!c[key].is_string())
            throw field_error(key, fmt::format("must be a string, got a JSON {}", c[key].type_name()));
        v = c[key].get<std::string>();
    };
    auto flag = [&](const char* key, std::optional<bool>& v) {
        if (!c.contains(key)) return;
        if (!c[key].is_boolean())
            throw field_error(key, fmt::format("must be true or false, got a JSON {}", c[key].type_name()));
        v = c[key].get<bool>();
    };
    auto size = [&](const char* key, std::optional<int64_t>& v) {
        if (!c.contains(key)) return;
        const auto& j = c[key];
        if (!j.is_number_unsigned() || j.get<uint64_t>() < 1 || j.get<uint64_t>() > static_cast<uint64_t>(kMaxDumpSize))
            throw field_error(key, fmt::format("must be an integer in [1, {}]", kMaxDumpSize));
        v = static_cast<int64_t>(j.get<uint64_t>());
    };

    text("mask", out.mask);
    // window: --dump writes it beside mask "custom", whose tensor holds the window; alone it would be dropped
    out.window = c.contains("window");
    if (out.window && out.mask != "custom")
        throw field_error("window", "is read only beside mask \"custom\" and the tensor mask that holds the window, "
                                    "as a dump writes them");
    // B, T and D come from tensor x: the config may only repeat them.
    size("batch", out.batch);
    size("seq", out.seq);
    size("d_model", out.d_model);
    if (auto x = d.tensors.find("x"); x != d.tensors.end() && x->second.rank() == 3) {
        const Shape& xs = x->second.shape;
        for (const auto& [key, n, dim] :
             {std::tuple{"batch", out.batch, xs[0]}, {"seq", out.seq, xs[1]}, {"d_model", out.d_model, xs[2]}})
            if (n && *n != dim)
                throw field_error(key, fmt::format("says {} but tensor x has shape {}", *n, shape_str(xs)));
    }
    size("heads", out.heads);
    size("d_k", out.d_k);
    size("d_v", out.d_v);
    size("kv_heads", out.kv_heads);
    text("scale", out.scale);
    if (c.contains("fill")) {
        // A number, or the string "-inf" (a JSON number cannot be infinite).
        const auto& j = c["fill"];
        if (!j.is_number() && !j.is_string())
            throw field_error("fill", fmt::format("must be a number or \"-inf\", got a JSON {}", j.type_name()));
        out.fill = j.is_string() ? j.get<std::string>() : fmt::format("{}", j.get<double>());
    }
    text("init", out.init);
    if (c.contains("rope")) {
        const auto& j = c["rope"];
        if (!(j.is_boolean() && !j.get<bool>()) && !j.is_number())
            throw field_error("rope",
                              fmt::format("must be false or the base, a number > 1, got a JSON {}", j.type_name()));
        out.rope = j.is_number();
        if (j.is_number()) out.rope_base = j.get<double>();
    }
    flag("alibi", out.alibi);
    if (c.contains("softcap")) {
        const auto& j = c["softcap"];
        if (!j.is_number() || !(j.get<double>() >= 0.0 && j.get<double>() <= 1e30))
            throw field_error("softcap", "must be a number >= 0 (0: off)");
        out.softcap = j.get<double>();
    }
    flag("bias", out.bias);
    flag("train", out.train);
    if (c.contains("dropout")) {
        const auto& j = c["dropout"];
        if (!j.is_number()) throw field_error("dropout", "must be a number");
        if (!dropout_in_range(j.get<double>())) throw field_error("dropout", kDropoutRule);
        out.dropout = j.get<double>();
    }
    return out;
}

DumpMasks read_dump_masks(const Dump& d, int64_t B, int64_t H, int64_t T, int64_t Tk) {
    DumpMasks out;
    // [B|1, T, Tk], or per head [B|1, H, T, Tk] (as --dump writes a per-head mask)
    auto per_head_shape = [&](const char* name, const Tensor& m) {
        const bool per_head = m.rank() == 4 && m.dim(1) == H;
        if ((m.rank() != 3 && !per_head) || (m.dim(0) != B && m.dim(0) != 1) || m.dim(-2) != T || m.dim(-1) != Tk)
            throw InputError(
                fmt::format("tensor {}: has shape {}, expected [{}, {}, {}] (or [1, {}, {}], or [{}, {}, {}, {}] "
                            "per head)",
                            name, shape_str(m.shape), B, T, Tk, T, Tk, B, H, T, Tk));
        return per_head;
    };
    if (auto it = d.tensors.find("mask"); it != d.tensors.end()) {
        const Tensor& m = it->second;
        const bool per_head = per_head_shape("mask", m);
        std::vector<uint8_t> allowed(m.data.size());
        for (size_t k = 0; k < m.data.size(); ++k) {
            if (m.data[k] != 0.0f && m.data[k] != 1.0f)
                throw InputError(fmt::format("tensor mask: must hold 0 (masked) or 1 (may attend), got {}",
                                             tensor_element("mask", m, k)));
            allowed[k] = m.data[k] != 0.0f;
        }
        out.allowed = per_head ? Mask::custom_heads(m.dim(0), m.dim(1), T, Tk, std::move(allowed))
                               : Mask::custom(m.dim(0), T, Tk, std::move(allowed));
    }
    if (auto it = d.tensors.find("additive_mask"); it != d.tensors.end()) {
        Tensor a = it->second;
        const bool per_head = per_head_shape("additive_mask", a);
        for (size_t k = 0; k < a.data.size(); ++k)
            if (std::isnan(a.data[k]) || a.data[k] == INFINITY)
                throw InputError(fmt::format("tensor additive_mask: must hold finite values or -inf, got {}",
                                             tensor_element("additive_mask", a, k)));
        const int64_t ab = a.dim(0), ah = per_head ? a.dim(1) : 1;
        out.additive = per_head ? Mask::additive_heads(ab, ah, T, Tk, std::move(a.data))
                                : Mask::additive_mask(ab, T, Tk, std::move(a.data));
    }
    return out;
}

}  // namespace attn
