// Reading a learner's file into a problem and its stages (attn/check/check.hpp).
#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "attn/check/check.hpp"
#include "attn/core/errors.hpp"
#include "attn/io/dump.hpp"
#include "attn/io/dump_file.hpp"
#include "attn/io/npy.hpp"
#include "attn/io/safetensors.hpp"

namespace attn::check {
namespace {

bool ends_with(const std::string& s, std::string_view e) {
    return s.size() >= e.size() && s.compare(s.size() - e.size(), e.size(), e) == 0;
}

int64_t parse_count(const std::string& text, const std::string& what) {
    int64_t v = 0;
    size_t used = 0;
    try {
        v = std::stoll(text, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (used == 0 || used != text.size() || v < 0)
        throw InputError(fmt::format("mask: {} must be a whole number >= 0, got '{}'", what, text));
    return v;
}

void require_finite(const std::string& name, const Arr& a) {
    for (double v : a.v)
        if (!std::isfinite(v)) throw InputError(fmt::format("{}: holds NaN or inf; the inputs must be finite", name));
}

// (T, d) -> (1, 1, T, d); (H, T, d) -> (1, H, T, d)
Arr as_heads(const std::string& name, Arr a) {
    if (a.shape.size() < 2 || a.shape.size() > 4)
        throw InputError(fmt::format("{}: shape {} fits no reading; give (B, H, T, d), (H, T, d) or (T, d)", name,
                                     shape_str(a.shape)));
    while (a.shape.size() < 4) a.shape.insert(a.shape.begin(), 1);
    return a;
}

Scale scale_from_config(const nlohmann::json& v) {
    Scale s;
    if (v.is_number()) {
        s.kind = ScaleKind::Constant;
        s.value = v.get<float>();
    } else if (v.is_string() && v.get<std::string>() == "none") {
        s.kind = ScaleKind::None;
    } else if (v.is_string() && v.get<std::string>() != "sqrt") {
        const std::string text = v.get<std::string>();
        size_t used = 0;
        double value = 0;
        try {
            value = std::stod(text, &used);
        } catch (const std::exception&) {
            used = 0;
        }
        if (used == 0 || used != text.size() || !(value > 0) || !std::isfinite(value))
            throw InputError(fmt::format("config scale: attn check reads sqrt, none or a positive number, got '{}'",
                                         text));
        s.kind = ScaleKind::Constant;
        s.value = static_cast<float>(value);
    }
    return s;
}

void check_linear(const std::map<std::string, Arr>& t, const std::string& w, const std::string& b, int64_t in) {
    const Arr& W = t.at(w);
    if (W.shape.size() != 2 || W.shape[1] != in)
        throw InputError(fmt::format("{}: shape {} does not fit an input of width {}: nn.Linear's layout is [out, {}]",
                                     w, shape_str(W.shape), in, in));
    if (t.count(b) != 0 && t.at(b).shape != Shape{W.shape[0]})
        throw InputError(fmt::format("{}: shape {} must be [{}], the rows of {}", b, shape_str(t.at(b).shape),
                                     W.shape[0], w));
}

void split_rows(const std::string& w, int64_t rows, int64_t heads, const char* what) {
    if (heads < 1 || rows % heads != 0)
        throw InputError(fmt::format("{}: its {} rows are not a multiple of {} {} heads", w, rows, heads, what));
}

}  // namespace

Arr to_arr(const Tensor& t) {
    Arr a;
    a.shape = t.shape;
    a.v.assign(t.data.begin(), t.data.end());
    return a;
}

MaskSpec parse_mask_spec(const std::string& text) {
    MaskSpec m;
    if (text == "none" || text.empty()) return m;
    std::string rest = text;
    if (rest.rfind("causal", 0) == 0) {
        m.causal = true;
        rest = rest.substr(6);
        if (rest.empty()) return m;
        if (rest[0] != '+')
            throw InputError(fmt::format("mask: '{}' is not none, causal, pad:L,... or causal+pad:L,...", text));
        rest = rest.substr(1);
    }
    if (rest.rfind("pad:", 0) != 0)
        throw InputError(fmt::format("mask: '{}' is not none, causal, pad:L,... or causal+pad:L,...", text));
    rest = rest.substr(4);
    size_t at = 0;
    while (true) {
        const size_t comma = rest.find(',', at);
        m.key_len.push_back(parse_count(rest.substr(at, comma - at), "each length"));
        if (comma == std::string::npos) break;
        at = comma + 1;
    }
    return m;
}

std::string mask_spec_name(const MaskSpec& m) {
    std::string s = m.causal ? "causal" : "";
    if (!m.key_len.empty()) {
        s += s.empty() ? "pad:" : "+pad:";
        for (size_t k = 0; k < m.key_len.size(); ++k) s += (k ? "," : "") + std::to_string(m.key_len[k]);
    }
    if (!m.dense.empty()) s += s.empty() ? "file" : "+file";
    return s.empty() ? "none" : s;
}

LearnerFile learner_from_tensors(const std::map<std::string, Tensor>& tensors, const std::vector<std::string>& f64,
                                 const nlohmann::json& config, const CheckSettings& given) {
    static const std::set<std::string> input_names = {"x",   "W_q", "W_k", "W_v", "W_o",
                                                      "b_q", "b_k", "b_v", "b_o", "mask"};
    // written by attn forward --dump beside the stages; not compared
    static const std::set<std::string> ignored = {"weights_dropped"};
    const std::vector<std::string>& stages = stage_names();
    std::map<std::string, Arr> t;
    for (const auto& [name, tensor] : tensors) {
        if (ignored.count(name) != 0) continue;
        if (input_names.count(name) == 0 && std::find(stages.begin(), stages.end(), name) == stages.end())
            throw InputError(fmt::format("{}: not a tensor attn check reads (inputs x, W_q, W_k, W_v, W_o, b_*, mask; "
                                         "stages Q, K, V, scores, scores_scaled, scores_masked, weights, head_out, "
                                         "merged, out)", name));
        t[name] = to_arr(tensor);
    }
    LearnerFile lf;
    Problem& p = lf.problem;
    auto cfg = [&](const char* key) {
        return config.is_object() && config.contains(key) ? config[key] : nlohmann::json();
    };
    const bool from_x = t.count("x") != 0;
    if (!from_x && !(t.count("Q") && t.count("K") && t.count("V")))
        throw InputError("the file holds neither x with W_q, W_k, W_v nor Q, K and V: nothing to recompute from");
    std::vector<std::string> inputs = {"mask"};
    if (from_x) {
        for (const char* w : {"W_q", "W_k", "W_v"})
            if (t.count(w) == 0)
                throw InputError(fmt::format("{}: missing; with x the file must hold W_q, W_k and W_v ([out, in])", w));
        inputs.insert(inputs.end(), {"x", "W_q", "W_k", "W_v", "W_o", "b_q", "b_k", "b_v", "b_o"});
    } else {
        inputs.insert(inputs.end(), {"Q", "K", "V"});
    }
    for (const std::string& n : inputs)
        if (t.count(n) != 0) require_finite(n, t[n]);
    // heads: the option, the file's config, or the learner's own 4-D Q or scores
    auto inferred = [&](const char* stage) -> int64_t {
        return t.count(stage) && t[stage].shape.size() == 4 ? t[stage].shape[1] : 0;
    };
    int64_t H = given.heads.value_or(cfg("heads").is_number_integer() ? cfg("heads").get<int64_t>() : 0);
    if (H <= 0 && from_x) H = inferred("Q") > 0 ? inferred("Q") : inferred("scores") > 0 ? inferred("scores") : 1;
    int64_t Hkv = given.kv_heads.value_or(cfg("kv_heads").is_number_integer() ? cfg("kv_heads").get<int64_t>() : 0);
    if (from_x) {
        Arr& x = t["x"];
        if (x.shape.size() == 2) x.shape.insert(x.shape.begin(), 1);
        if (x.shape.size() != 3)
            throw InputError(fmt::format("x: shape {} fits no reading; x is (B, T, D) or (T, D)", shape_str(x.shape)));
        const int64_t D = x.shape[2];
        check_linear(t, "W_q", "b_q", D);
        check_linear(t, "W_k", "b_k", D);
        check_linear(t, "W_v", "b_v", D);
        split_rows("W_q", t["W_q"].shape[0], H, "query");
        const int64_t Dk = t["W_q"].shape[0] / H;
        if (Hkv <= 0) Hkv = inferred("K") > 0 ? inferred("K") : t["W_k"].shape[0] / std::max<int64_t>(Dk, 1);
        if (t["W_k"].shape[0] != Hkv * Dk)
            throw InputError(fmt::format("W_k: {} rows, but {} kv heads of Dk {} need {}", t["W_k"].shape[0], Hkv, Dk,
                                         Hkv * Dk));
        split_rows("W_v", t["W_v"].shape[0], Hkv, "kv");
        if (t.count("W_o")) check_linear(t, "W_o", "b_o", H * (t["W_v"].shape[0] / Hkv));
        p.start = Start::x;
    } else {
        for (const char* n : {"Q", "K", "V"}) t[n] = as_heads(n, t[n]);
        const Arr &Q = t["Q"], &K = t["K"], &V = t["V"];
        H = Q.shape[1];
        Hkv = K.shape[1];
        if (K.shape[0] != Q.shape[0] || V.shape[0] != Q.shape[0] || V.shape[1] != Hkv || V.shape[2] != K.shape[2])
            throw InputError(fmt::format("K: Q {}, K {}, V {} disagree on batch, heads or keys", shape_str(Q.shape),
                                         shape_str(K.shape), shape_str(V.shape)));
        if (K.shape[3] != Q.shape[3])
            throw InputError(fmt::format("K: its width {} is not Q's {}: q·k needs one Dk", K.shape[3], Q.shape[3]));
        p.start = Start::qkv;
    }
    if (Hkv < 1 || H % Hkv != 0)
        throw InputError(fmt::format("kv heads: {} kv heads do not divide {} query heads", Hkv, H));
    p.heads = H;
    p.kv_heads = Hkv;
    for (const std::string& n : inputs)
        if (n != "mask" && t.count(n)) p.inputs[n] = t[n];
    p.scale = given.scale ? *given.scale : cfg("scale").is_null() ? Scale{} : scale_from_config(cfg("scale"));
    p.mask = given.mask ? *given.mask
                        : cfg("mask").is_string() ? parse_mask_spec(cfg("mask").get<std::string>()) : MaskSpec{};
    const int64_t B = from_x ? t["x"].shape[0] : t["Q"].shape[0];
    const int64_t Tq = from_x ? t["x"].shape[1] : t["Q"].shape[2], Tk = from_x ? Tq : t["K"].shape[2];
    if (!p.mask.key_len.empty()) {
        if (static_cast<int64_t>(p.mask.key_len.size()) != B)
            throw InputError(fmt::format("mask: {} padding lengths for a batch of {}", p.mask.key_len.size(), B));
        for (int64_t L : p.mask.key_len)
            if (L > Tk) throw InputError(fmt::format("mask: a padding length {} is more than the {} keys", L, Tk));
    }
    if (t.count("mask")) {
        const Arr& m = t["mask"];
        if (!(m.shape == Shape{Tq, Tk} || m.shape == Shape{B, Tq, Tk} || m.shape == Shape{1, Tq, Tk}))
            throw InputError(fmt::format("mask: shape {} must be [{}, {}] or [{}, {}, {}] (1 = may attend)",
                                         shape_str(m.shape), Tq, Tk, B, Tq, Tk));
        const int64_t per = Tq * Tk;
        for (int64_t b = 0; b < B; ++b)
            for (int64_t k = 0; k < per; ++k) {
                const double v = m.v[static_cast<size_t>((m.numel() == per ? 0 : b * per) + k)];
                if (v != 0 && v != 1) throw InputError("mask: holds a value other than 0 and 1 (1 = may attend)");
                p.mask.dense.push_back(v != 0);
            }
    }
    bool all64 = true, any = false;
    for (const std::string& s : stages)
        if (t.count(s) && std::find(inputs.begin(), inputs.end(), s) == inputs.end()) {
            lf.stages[s] = t[s];
            any = true;
            all64 = all64 && std::find(f64.begin(), f64.end(), s) != f64.end();
        }
    p.f64 = any && all64;
    return lf;
}

LearnerFile read_learner_file(const std::string& path, const CheckSettings& given) {
    std::vector<std::string> f64;
    Dump d;
    if (ends_with(path, ".npz")) {
        const std::string bytes = read_file(path);
        d = dump_from_npz(bytes, path);
        for (const ZipEntry& e : zip_entries(bytes, path))
            if (e.name != "__attn__.npy" && ends_with(e.name, ".npy") &&
                npy_from_string(e.data, path + ": " + e.name).kind == NpyArray::Kind::F64)
                f64.push_back(e.name.substr(0, e.name.size() - 4));
    } else if (ends_with(path, ".safetensors")) {
        const SafeTensors st = SafeTensors::parse(read_file(path), path);
        for (const std::string& n : st.names())
            if (st.info(n).dtype == DType::F64) f64.push_back(n);
        d = read_dump_any(path);
    } else if (ends_with(path, ".npy")) {
        throw InputError(fmt::format("{}: a .npy holds one array without its name; give an .npz (np.savez), "
                                     ".safetensors or attn-dump .json file", path));
    } else {
        d = read_dump_file(path);  // JSON numbers: read as float32, checked with the float32 tolerance
    }
    return learner_from_tensors(d.tensors, f64, d.config, given);
}

}  // namespace attn::check
