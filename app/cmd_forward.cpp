// `attn forward`: one multi-head attention forward pass on random (or given)
// input, with every step's shape (--trace) and every tensor as JSON (--dump);
// --backward adds the backward pass for an upstream gradient dout.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "attn/attn.hpp"
#include "attn/core/dropout.hpp"
#include "attn/io/dump_config.hpp"
#include "attn/io/dump_file.hpp"
#include "command.hpp"
#include "forward_seeds.hpp"
#include "html_page.hpp"
#include "impl_option.hpp"
#include "memory.hpp"
#include "options.hpp"
#include "parse.hpp"
#include "tensor_files.hpp"

namespace attn::cli {
namespace {

struct ForwardOpts {
    int64_t batch = 2, seq = 6, d_model = 16, heads = 1, d_k = 0, d_v = 0;  // the source's first example (C21)
    // Cross-attention: keys and values from x_kv (B, Tk, kdim) (and x_v (B, Tk, vdim) when vdim != kdim).
    // 0: self-attention sizes (Tk = T, kdim = vdim = D).
    int64_t tk = 0, kdim = 0, vdim = 0;
    int64_t window = 0;  // --window W: sliding window of W keys (0: none)
    std::string mask = "none", scale = "sqrt", fill = "-inf", init = "torch", impl = "reference";
    std::string dump, input, mask_file;
    HtmlOpts html;
    JsonOut json;  // --json [FILE]: the result object (attn-forward)
    JsonNonFinite json_nonfinite = JsonNonFinite::literal;
    double dropout = 0.0;
    // Score options (attn/core/attention.hpp): --kv-heads (0: --heads), --rope [BASE], --alibi, --softcap C (0: off)
    int64_t kv_heads = 0;
    std::string rope;  // "" (given without a value: base 10000) or the base; used when given("--rope")
    bool alibi = false;
    double softcap = 0.0;
    bool rope_from_file = false;  // --input's config.rope set the base
    bool train = false, trace = false, no_bias = false, backward = false;
    uint64_t seed = 0;
    // Given on the command line: --input replaces B, T and D; --dropout needs --train.
    bool batch_given = false, seq_given = false, d_model_given = false, dropout_given = false;
    // Whether the option named (as "--heads") was given on the command line.
    std::function<bool(const char*)> given = [](const char*) { return false; };
};

// The first NaN or infinity in `t`, as "x[0, 2, 5] = nan", or "" when every value is finite.
std::string first_non_finite(std::string_view name, const Tensor& t) {
    for (size_t k = 0; k < t.data.size(); ++k)
        if (!std::isfinite(t.data[k])) return tensor_element(name, t, k);
    return {};
}

// A tensor of the --input file must hold finite values only: NaN or infinity
// (or 1e39, infinite as a float) would come out as NaN attention.
void require_finite_input(const std::string& path, std::string_view name, const Tensor& t) {
    if (const std::string bad = first_non_finite(name, t); !bad.empty())
        throw InputError(
            fmt::format("--input: '{}': tensor {} must hold finite float32 values, got {}", path, name, bad));
}

// Tensors from --input replace the random ones; shapes must match the config.
void take_tensor(const Dump& in, const char* name, Tensor& dst, const std::string& path) {
    auto it = in.tensors.find(name);
    if (it == in.tensors.end()) return;
    if (it->second.shape != dst.shape)
        throw InputError(fmt::format("--input: '{}' tensor {} has shape {}, expected {}", path, name,
                                     shape_str(it->second.shape), shape_str(dst.shape)));
    require_finite_input(path, name, it->second);
    dst = it->second;
}

// sqrt(sum of squares), in double.
double tensor_norm(const Tensor& t) {
    double s = 0;
    for (float v : t.data) s += static_cast<double>(v) * v;
    return std::sqrt(s);
}

// The backward pass's tensors in the order the table and the dump list them
// (the (T, T) ones only when the backend's backward records them; biases only with bias).
std::vector<std::pair<const char*, const Tensor*>> backward_tensors(const MhaGrads& g, const MhaBackwardRecord& r) {
    std::vector<std::pair<const char*, const Tensor*>> all = {
        {"dout", &r.d_out},   {"d_out_heads", &r.d_head_out}, {"d_weights", &r.attn.d_weights},
        {"d_scores", &r.attn.d_scores}, {"dQ", &r.dQ},        {"dK", &r.dK},
        {"dV", &r.dV},        {"dx", &g.dx},                  {"dW_q", &g.dW_q},
        {"db_q", &g.db_q},    {"dW_k", &g.dW_k},              {"db_k", &g.db_k},
        {"dW_v", &g.dW_v},    {"db_v", &g.db_v},              {"dW_o", &g.dW_o},
        {"db_o", &g.db_o}};
    std::erase_if(all, [](const auto& p) { return p.second->empty(); });
    return all;
}

// A string from an --input file for a message: one line, at most 60 bytes.
std::string shown(const std::string& s) {
    std::string out;
    for (char c : s.substr(0, 60)) out += static_cast<unsigned char>(c) < 0x20 ? '?' : c;
    while (!out.empty() && (static_cast<unsigned char>(out.back()) & 0xC0) == 0x80)
        out.pop_back();  // no cut code point
    if (!out.empty() && static_cast<unsigned char>(out.back()) >= 0xC0) out.pop_back();
    return out + (s.size() > 60 ? "..." : "");
}

// True when both masks allow the same (query, key) pairs in every batch row.
bool same_mask(const Mask& a, const Mask& b, int64_t B, int64_t T, int64_t Tk) {
    const int64_t H = std::max(a.heads(), b.heads());
    for (int64_t r = 0; r < B; ++r)
        for (int64_t h = 0; h < H; ++h) {
            const MaskRow ra = a.row(r, a.heads() > 1 ? h : 0, Tk), rb = b.row(r, b.heads() > 1 ? h : 0, Tk);
            for (int64_t i = 0; i < T; ++i)
                for (int64_t j = 0; j < Tk; ++j)
                    if (ra.allowed(i, j) != rb.allowed(i, j)) return false;
        }
    return true;
}

// The layer an --input file describes: its config (the schema and its checks are
// read_dump_config's, attn/io/dump_config.hpp; batch, seq and d_model must match x) and
// its mask tensors. Each value replaces the option's; an option given on the command
// line must say the same, or the run is refused naming both: "--heads 2 conflicts with
// F: config.heads = 4". Keys the file lacks keep the options' values. Returns the
// file's mask, if it has one.
//
// A library reader of the file, whose InputError names the field ("config.heads: RULE"),
// as the user reads it: "--input: 'x.json': config.heads RULE".
template <class F>
auto from_dump(const std::string& path, F&& f) -> decltype(f()) {
    try {
        return f();
    } catch (const InputError& e) {
        std::string why = e.what();
        if (const size_t colon = why.find(": "); colon != std::string::npos) why.erase(colon, 1);
        throw InputError(fmt::format("--input: '{}': {}", path, why));
    }
}

// A value of the file read by an option's parser: its error names the file and key, not the option.
template <class Parse>
auto from_file(const std::string& path, std::string_view key, Parse&& parse) {
    try {
        return parse();
    } catch (const InputError& e) {
        std::string why = e.what();
        if (why.rfind("--", 0) == 0 && why.find(": ") != std::string::npos) why = why.substr(why.find(": ") + 2);
        throw InputError(fmt::format("--input: '{}': config.{} {}", path, key, why));
    }
}

// An option given beside an --input file that says otherwise.
InputError input_conflict(const std::string& path, std::string_view opt_and_value, std::string_view file_says) {
    return InputError(fmt::format("{} conflicts with {}: {}", opt_and_value, path, file_says));
}

// The mask of an --input file: config.mask (a --mask spec, or "custom": see the tensor), the
// tensor "mask" and an additive part (tensor "additive_mask"); o.mask is set to match, and a
// --mask given beside it must be the same mask.
std::optional<Mask> take_input_mask(const Dump& in, const std::string& path, const std::optional<std::string>& spec,
                                    ForwardOpts& o) {
    const int64_t B = o.batch, T = o.seq, Tk = o.tk;  // queries, keys
    DumpMasks file = from_dump(path, [&] { return read_dump_masks(in, B, o.heads, T, Tk); });
    std::optional<Mask> mask;
    std::string says;
    if (spec && *spec != "custom") {
        mask = from_file(path, "mask", [&] { return parse_mask(*spec, B, Tk); });
        says = "config.mask = " + shown(*spec);
    }
    if (file.allowed) {
        if (mask && !same_mask(*mask, *file.allowed, B, T, Tk))
            throw InputError(fmt::format("--input: '{}': {} disagrees with its tensor mask", path, says));
        if (!mask) says = "its tensor mask";
        mask = std::move(file.allowed);
    } else if (spec && *spec == "custom") {
        throw InputError(fmt::format("--input: '{}': config.mask is \"custom\" but the file has no tensor mask", path));
    }
    if (file.additive) {
        mask = mask ? mask->combined(*file.additive) : std::move(file.additive);
        if (says.empty()) says = "its tensor additive_mask";
    }
    if (mask) {
        if (o.given("--mask") && !same_mask(parse_mask(o.mask, B, Tk), *mask, B, T, Tk))
            throw InputError(fmt::format("--mask {} conflicts with {}: {}", o.mask, path, says));
        o.mask = spec ? *spec : "custom";
    }
    return mask;
}

// The score options an --input file's config records (rope, alibi, softcap), each agreeing
// with the option when both are given.
void take_input_score_options(const DumpLayerConfig& c, const std::string& path, ForwardOpts& o) {
    if (c.rope && *c.rope) {
        const std::string base = fmt::format("{}", c.rope_base);
        auto given_base = [&o]() {
            try {
                return o.rope.empty() ? 10000.0 : std::stod(o.rope);
            } catch (const std::exception&) {
                return std::nan("");
            }
        };
        if (o.given("--rope") && given_base() != c.rope_base)
            throw input_conflict(path, "--rope " + (o.rope.empty() ? std::string("10000") : o.rope),
                                 "config.rope = " + base);
        o.rope = base;
        o.rope_from_file = true;
    } else if (c.rope && o.given("--rope")) {
        throw input_conflict(path, "--rope", "config.rope = false");
    }
    if (c.alibi) {
        if (o.given("--alibi") && !*c.alibi) throw input_conflict(path, "--alibi", "config.alibi = false");
        o.alibi = *c.alibi;
    }
    if (c.softcap) {
        if (o.given("--softcap") && o.softcap != *c.softcap)
            throw input_conflict(path, fmt::format("--softcap {}", o.softcap),
                                 fmt::format("config.softcap = {}", *c.softcap));
        o.softcap = *c.softcap;
    }
}

std::optional<Mask> take_input_config(const Dump& in, const std::string& path, ForwardOpts& o) {
    const DumpLayerConfig c = from_dump(path, [&] { return read_dump_config(in); });
    auto conflict = [&](std::string_view opt_and_value, std::string_view file_says) {
        return input_conflict(path, opt_and_value, file_says);
    };
    auto parsed = [&](std::string_view key, auto&& parse) { return from_file(path, key, parse); };
    for (const auto& [key, opt, file, v] : {std::tuple{"heads", "--heads", c.heads, &o.heads},
                                            {"d_k", "--d-k", c.d_k, &o.d_k},
                                            {"d_v", "--d-v", c.d_v, &o.d_v},
                                            {"kv_heads", "--kv-heads", c.kv_heads, &o.kv_heads}})
        if (file) {
            if (o.given(opt) && *v != *file)
                throw conflict(fmt::format("{} {}", opt, *v), fmt::format("config.{} = {}", key, *file));
            *v = *file;
        }
    if (c.scale) {
        const Scale fs = parsed("scale", [&] { return parse_scale(*c.scale); });
        const Scale os = parse_scale(o.scale);
        if (o.given("--scale") && (os.kind != fs.kind || os.value != fs.value))
            throw conflict("--scale " + o.scale, "config.scale = " + shown(*c.scale));
        o.scale = *c.scale;
    }
    if (c.fill) {
        const float ff = parsed("fill", [&] { return parse_fill(*c.fill); });
        if (o.given("--fill") && parse_fill(o.fill) != ff)
            throw conflict("--fill " + o.fill, "config.fill = " + shown(*c.fill));
        o.fill = *c.fill;
    }
    if (c.init) {
        const InitSpec fi = parsed("init", [&] { return parse_init(*c.init); });
        const InitSpec oi = parse_init(o.init);
        if (o.given("--init") && (oi.kind != fi.kind || oi.std != fi.std))
            throw conflict("--init " + o.init, "config.init = " + shown(*c.init));
        o.init = *c.init;
    }
    take_input_score_options(c, path, o);
    if (c.bias) {
        if (o.given("--no-bias") && *c.bias) throw conflict("--no-bias", "config.bias = true");
        o.no_bias = !*c.bias;
    }
    if (c.train) {
        if (o.given("--train") && !*c.train) throw conflict("--train", "config.train = false");
        o.train = *c.train;
    }
    if (c.dropout) {
        if (o.given("--dropout") && o.dropout != *c.dropout)
            throw conflict(fmt::format("--dropout {}", o.dropout), fmt::format("config.dropout = {}", *c.dropout));
        o.dropout = *c.dropout;
    }
    return take_input_mask(in, path, c.mask, o);
}

// The score options of the command line, checked, into opt; each error names its option.
void take_score_options(const ForwardOpts& o, const MhaConfig& cfg, AttentionOptions& opt) {
    if (o.given("--rope") || o.rope_from_file) {
        double base = 10000.0;
        if (!o.rope.empty()) {
            size_t used = 0;
            try {
                base = std::stod(o.rope, &used);
            } catch (const std::exception&) {
                used = 0;
            }
            if (used != o.rope.size() || !std::isfinite(base) || !(base > 1.0) || base > 1e30)
                throw InputError(
                    fmt::format("--rope: the base must be a number > 1 (default 10000), got '{}'", o.rope));
        }
        if (cfg.d_k % 2 != 0) {
            const InputError e(fmt::format("--rope: rotates pairs of dims (d, d + Dk/2), so Dk must be even, got "
                                           "Dk = {} (set --d-k or --heads)",
                                           cfg.d_k));
            if (!o.rope_from_file || o.given("--rope")) throw e;
            from_file(o.input, "rope", [&]() -> int { throw e; });  // the file asked for rope, not an option
        }
        opt.rope = true;
        opt.rope_base = static_cast<float>(base);
    }
    opt.alibi = o.alibi;
    if (o.given("--softcap") || o.softcap != 0.0) {
        // also as a float32: 1e-46 would round to 0, which is the cap off
        if (!(o.softcap > 0.0 && o.softcap <= 1e30) ||
            static_cast<float>(o.softcap) < std::numeric_limits<float>::min())
            throw InputError(
                fmt::format("--softcap: must be a number in (0, 1e30] (scores -> C·tanh(scores/C)), at least "
                            "{:g} (the smallest normal float32), got {}",
                            std::numeric_limits<float>::min(), o.softcap));
        opt.softcap = static_cast<float>(o.softcap);
    }
}

nlohmann::json fill_json(float fill) {
    return std::isinf(fill) ? nlohmann::json("-inf") : nlohmann::json(static_cast<double>(fill));
}

// ", Tk=7 kdim=12 vdim=12" for cross-attention, "" for self-attention.
std::string cross_sizes(bool cross, const ForwardOpts& o) {
    return cross ? fmt::format(", cross-attention: Tk={} kdim={} vdim={}", o.tk, o.kdim, o.vdim) : "";
}

// --input FILE: its tensor x gives B, T and D, its x_kv (and x_v) cross-attention's keys
// (and values), its config the settings it records, each checked against the options
// given; returns the file's mask, which replaces --mask (nullopt: none).
std::optional<Mask> read_forward_input(ForwardOpts& o, std::optional<Dump>& input, bool& cross) {
    for (const auto& [given, opt] : {std::pair{o.batch_given, "--batch"}, {o.seq_given, "--seq"},
                                     {o.d_model_given, "--d-model"}})
        if (given)
            throw InputError(fmt::format("{}: cannot be combined with --input, whose tensor x gives B, T and D", opt));
    input = read_tensor_file("--input", o.input);  // attn-dump JSON, .npy or .safetensors (tensor_files.hpp)
    auto it = input->tensors.find("x");
    if (it == input->tensors.end() || it->second.rank() != 3)
        throw InputError(fmt::format("--input: '{}' needs a tensor \"x\" of shape [B, T, D]", o.input));
    const Shape& xs = it->second.shape;
    if (std::ranges::any_of(xs, [](int64_t n) { return n < 1 || n > kMaxSize; }))
        throw InputError(fmt::format("--input: '{}': tensor x has shape {}; B, T and D must each be in [1, {}]",
                                     o.input, shape_str(xs), kMaxSize));
    require_finite_input(o.input, "x", it->second);
    o.batch = xs[0];
    o.seq = xs[1];
    o.d_model = xs[2];
    // cross-attention inputs: x_kv (B, Tk, kdim), and x_v (B, Tk, vdim) when the values differ from the keys
    for (const char* name : {"x_kv", "x_v"})
        if (auto kv = input->tensors.find(name); kv != input->tensors.end()) {
            const Shape& ks = kv->second.shape;
            if (kv->second.rank() != 3 || ks[0] != o.batch || ks[1] < 1 || ks[1] > kMaxSize || ks[2] < 1 ||
                ks[2] > kMaxSize)
                throw InputError(fmt::format("--input: '{}': tensor {} has shape {}; it must be [B = {}, Tk, width] "
                                             "with Tk and width in [1, {}]",
                                             o.input, name, shape_str(ks), o.batch, kMaxSize));
            require_finite_input(o.input, name, kv->second);
            const bool is_v = std::string_view(name) == "x_v";
            if (is_v && input->tensors.count("x_kv") == 0)
                throw InputError(fmt::format("--input: '{}': tensor x_v needs x_kv (the keys' input) too", o.input));
            for (const auto& [given, opt, val, want] :
                 {std::tuple{o.tk != 0, "--tk", o.tk, ks[1]},
                  {(is_v ? o.vdim : o.kdim) != 0, is_v ? "--vdim" : "--kdim", is_v ? o.vdim : o.kdim, ks[2]}})
                if (given && val != want)
                    throw InputError(fmt::format("{} {} conflicts with {}: tensor {} has shape {}", opt, val, o.input,
                                                 name, shape_str(ks)));
            o.tk = ks[1];
            (is_v ? o.vdim : o.kdim) = ks[2];
        }
    cross = cross || input->tensors.count("x_kv") > 0;
    if (input->tensors.count("x_kv") > 0 && input->tensors.count("x_v") == 0) {
        if (o.vdim != 0 && o.vdim != o.kdim)
            throw InputError(fmt::format("--vdim {} conflicts with {}: without a tensor x_v the values come from x_kv "
                                         "(width {})",
                                         o.vdim, o.input, o.kdim));
        o.vdim = o.kdim;
    }
    if (o.tk == 0) o.tk = o.seq;
    return take_input_config(*input, o.input, o);
}

// The mask of the run: the --input file's or --mask (padding lengths over the Tk keys), then
// --mask-file (a boolean or additive [Tq, Tk], [B, Tq, Tk] or [B, H, Tq, Tk] tensor, ANDed or
// added) and --window W (a sliding window; causal, Mistral's convention of the query and the
// W - 1 keys before it, when the mask is causal, symmetric otherwise).
Mask forward_mask(const ForwardOpts& o, const MhaConfig& cfg, std::optional<Mask> file_mask) {
    Mask mask =
        file_mask ? std::move(*file_mask) : parse_mask(o.mask, o.batch, o.tk);  // padding lengths over the Tk keys
    if (!o.mask_file.empty()) {
        const Mask fm = read_mask_file("--mask-file", o.mask_file, o.batch, cfg.heads, o.seq, o.tk);
        mask = with_option("--mask-file", [&] { return mask.combined(fm); });
    }
    if (o.window > 0) {
        const bool causal = mask.row(0, 0, o.tk).causal;  // the mask's own flag (causal, window-causal:, ...)
        mask = with_option("--window", [&] { return mask.combined(Mask::sliding_window(o.window, causal)); });
    }
    return mask;
}

// What the chosen backend cannot do with these options, refused before any work: a device
// it lacks, a per-head mask off the CPU, score options or a backward pass it does not have,
// the (T, T) weights that --html and --trace need; and a --dump name it cannot write.
void check_forward_backend(const ForwardOpts& o, const MhaConfig& cfg, const AttentionOptions& aopt, const Mask& mask,
                           Backend backend) {
    const BackendInfo& row = backend_info(backend);
    require_available("--impl", backend);  // one line, exit 2: e.g. a GPU backend without a GPU
    if (row.device == Device::Cuda) with_option("--mask-file", [&] { cuda_check_mask(row.cuda_kernel, mask); });
    if (!o.dump.empty()) {
        with_option("--dump", [&] { dump_format_of(o.dump); });  // .safetensors, .npz or .json, before any work
        require_writable("--dump", o.dump);
    }
    check_html(o.html);
    require_json_writable(o.json);
    // the score options: a name for messages ("grouped-query heads (H_q 4, H_kv 2), RoPE"), from shapes alone
    const std::string features =
        score_features(Tensor(Shape{1, cfg.heads, 1, 1}), Tensor(Shape{1, cfg.kv_heads, 1, 1}), aopt);
    if (!features.empty() && !row.score_options)
        throw InputError(fmt::format("--impl {}: does not implement {}; use --impl {}", row.name, features,
                                     score_option_backend_names()));
    if (!features.empty() && o.backward && !row.backward_score_options)
        throw InputError(fmt::format("--backward: {}'s backward pass does not implement {}; use --impl reference",
                                     row.name, features));
    if (o.backward && row.backward == nullptr)
        throw InputError(
            fmt::format("--backward: {} has no backward pass (backends with one: {}); pick one with --impl", row.name,
                        backward_backend_names()));
    if (!row.records && !o.html.file.empty())
        throw InputError(fmt::format("--html: {} never forms the (T, T) weights; use --impl reference", row.name));
    if (!row.records && o.trace)
        throw InputError(fmt::format("--trace: {} never forms the (T, T) scores; use --impl reference to trace them",
                                     row.name));
}

// The run's config, as the dump and the --json result record it (a mask given by file or --window
// is recorded as "custom": the dump's mask tensor holds it).
nlohmann::json forward_config(const ForwardOpts& o, const MhaConfig& cfg, const AttentionOptions& aopt, bool cross) {
    nlohmann::json c = {{"batch", o.batch},
                        {"seq", o.seq},
                        {"d_model", cfg.d_model},
                        {"heads", cfg.heads},
                        {"d_k", cfg.d_k},
                        {"d_v", cfg.d_v},
                        {"mask", o.mask},
                        {"scale", o.scale},
                        {"fill", fill_json(aopt.fill)},
                        {"dropout", o.dropout},
                        {"train", o.train},
                        {"init", o.init},
                        {"impl", o.impl},
                        {"bias", cfg.bias},
                        {"backward", o.backward},
                        {"kv_heads", cfg.kv_heads},
                        {"rope", aopt.rope ? nlohmann::json(aopt.rope_base) : nlohmann::json(false)},
                        {"alibi", aopt.alibi},
                        {"softcap", aopt.softcap}};
    if (o.window > 0) {  // the tensor mask holds the window (read back by --input as a custom mask)
        c["mask"] = "custom";
        c["window"] = o.window;
    }
    if (!o.mask_file.empty()) {  // the tensors mask (and additive_mask) hold the combined mask
        c["mask"] = "custom";
        c["mask_file"] = o.mask_file;
    }
    if (cross) {
        c["tk"] = o.tk;
        c["kdim"] = cfg.kdim;
        c["vdim"] = cfg.vdim;
    }
    return c;
}

// --json: the result of the run as one object (attn-forward): the config, the output's shape, norm
// and first row, the rows' check and, with --backward, each gradient's shape and norm. The full
// tensors are --dump's.
void write_forward_json(const ForwardOpts& o, const MhaConfig& cfg, const AttentionOptions& aopt, const Mask& mask,
                        bool cross, const Tensor& out, double row_sum_err, bool records, const MhaGrads& grads,
                        const MhaBackwardRecord& brec, const TextOut& text) {
    const int64_t D = out.shape.back();
    nlohmann::json j = {{"seed", o.seed}, {"config", forward_config(o, cfg, aopt, cross)}, {"mask", mask.describe()}};
    const std::vector<float> first(out.data.begin(), out.data.begin() + std::min<int64_t>(D, out.numel()));
    j["out"] = {{"shape", out.shape}, {"norm", tensor_norm(out)}, {"first_row", first}};
    j["row_sum_error"] = records ? nlohmann::json(row_sum_err) : nlohmann::json(nullptr);
    if (o.backward) {
        nlohmann::json g = nlohmann::json::array();
        for (const auto& [name, t] : backward_tensors(grads, brec))
            g.push_back({{"name", name}, {"shape", t->shape}, {"norm", tensor_norm(*t)}});
        j["gradients"] = g;
    }
    if (!o.dump.empty() && o.dump != "-") j["dump"] = o.dump;
    write_json(o.json, j, "attn-forward", 1);
    if (!o.json.to_stdout()) text.print("  wrote {} (attn-forward JSON)\n", o.json.path());
}

// Everything of the run as an attn-dump: the config it ran with (a mask given by file or
// --window as the custom tensor mask), the effective mask broadcast to (B, T, Tk) or per head,
// the inputs, weights, every intermediate and, with --backward, every gradient.
Dump forward_dump(const ForwardOpts& o, const MhaConfig& cfg, const AttentionOptions& aopt, const Mask& mask,
                  const MultiHeadAttention& mha, const ForwardRecord& rec, const Tensor& x_kv, const Tensor& x_v,
                  const MhaGrads& grads, const MhaBackwardRecord& brec) {
    const bool cross = !x_kv.shape.empty(), separate_v = !x_v.shape.empty();
    Dump d;
    d.seed = o.seed;
    d.config = forward_config(o, cfg, aopt, cross);
    // The effective boolean mask (1 = may attend), broadcast to (B, T, T), or to (B, H, T, T) when it
    // differs per head; the additive part, if any, likewise as additive_mask.
    const int64_t Hm = mask.heads(), T = o.seq, Tk = o.tk;
    Shape ms = Hm > 1 ? Shape{o.batch, Hm, T, Tk} : Shape{o.batch, T, Tk};
    Tensor m(ms), am;
    const bool additive = !mask.additive_values().empty();
    if (additive) am = Tensor(ms);
    for (int64_t b = 0; b < o.batch; ++b)
        for (int64_t h = 0; h < Hm; ++h) {
            const MaskRow mask_b = mask.row(b, h, Tk);
            for (int64_t i = 0; i < T; ++i)
                for (int64_t j = 0; j < Tk; ++j) {
                    const size_t at = static_cast<size_t>(((b * Hm + h) * T + i) * Tk + j);
                    m.data[at] = mask_b.allowed(i, j) ? 1.0f : 0.0f;
                    if (additive) am.data[at] = mask_b.additive_at(i, j);
                }
        }
    auto put = [&](const char* name, const Tensor& t) {
        if (t.empty() && t.shape.empty()) return;
        d.tensors[name] = t;
        d.order.push_back(name);
    };
    put("x", rec.x);
    if (cross) put("x_kv", x_kv);
    if (separate_v) put("x_v", x_v);
    put("W_q", mha.q_proj.W);
    put("b_q", mha.q_proj.b);
    put("W_k", mha.k_proj.W);
    put("b_k", mha.k_proj.b);
    put("W_v", mha.v_proj.W);
    put("b_v", mha.v_proj.b);
    put("W_o", mha.o_proj.W);
    put("b_o", mha.o_proj.b);
    put("mask", m);
    if (additive) put("additive_mask", am);
    put("Q", rec.Q);
    put("K", rec.K);
    put("V", rec.V);
    if (aopt.rope) {
        // what the scores are taken of: Q_heads, K_heads rotated (queries and keys at positions 0..T-1)
        Tensor qr = rec.Q, kr = rec.K;
        rope_rotate(qr.ptr(), qr.dim(0) * qr.dim(1), qr.dim(2), qr.dim(3), aopt.query_offset, aopt.rope_base);
        rope_rotate(kr.ptr(), kr.dim(0) * kr.dim(1), kr.dim(2), kr.dim(3), 0, aopt.rope_base);
        put("Q_rope", qr);
        put("K_rope", kr);
    }
    if (aopt.alibi) {
        const std::vector<double> m = alibi_slopes(cfg.heads);
        put("alibi_slopes", Tensor::from(Shape{cfg.heads}, std::vector<float>(m.begin(), m.end())));
    }
    put("scores", rec.attn.scores_raw);
    put("scores_scaled", rec.attn.scores_scaled);
    put("scores_masked", rec.attn.scores_masked);
    put("weights", rec.attn.weights);
    put("weights_dropped", rec.attn.weights_dropped);
    put("head_out", rec.head_out);
    put("merged", rec.merged);
    put("out", rec.out);
    if (o.backward)
        for (const auto& [name, t] : backward_tensors(grads, brec)) put(name, *t);
    return d;
}

// The weights must fit in memory (the error blames the widest of the sizes they grow with);
// returns the sizes the run's own memory check goes on with.
ForwardSizes check_weight_memory(const ForwardOpts& o, const MhaConfig& cfg, bool cross) {
    // Weights, activations and (B, H, T, T) tensors, counted in double so nothing overflows (app/memory.hpp).
    ForwardSizes sizes{o.batch, std::max(o.seq, o.tk), cfg.d_model, cfg.heads, cfg.d_k, cfg.d_v, cfg.bias, true,
                       o.train && o.dropout > 0, !o.dump.empty() || !o.html.file.empty()};
    sizes.kv_heads = cfg.kv_heads;
    sizes.kdim = cfg.kdim;
    sizes.vdim = cfg.vdim;
    // the weights grow with D times the projections' widths: blame the widest (d_model first on a tie)
    const char* weight_opt = std::max({std::pair{double(cfg.d_model), "--d-model"},
                                       {double(cfg.heads) * double(cfg.d_k), o.d_k > cfg.heads ? "--d-k" : "--heads"},
                                       {double(cfg.heads) * double(cfg.d_v), o.d_v > cfg.heads ? "--d-v" : "--heads"},
                                       {double(cfg.kdim), "--kdim"},
                                       {double(cfg.vdim), "--vdim"}},
                                      [](const auto& a, const auto& b) { return a.first < b.first; })
                                 .second;
    require_fits_in_memory(
        weight_opt, forward_weight_bytes(sizes),
        fmt::format("D={}, H={}, Dk={}, Dv={}{} (the weights)", cfg.d_model, cfg.heads, cfg.d_k, cfg.d_v,
                    cross ? fmt::format(", kdim={}, vdim={}", cfg.kdim, cfg.vdim) : std::string()));
    return sizes;
}

// The run must fit in memory, with --dump the dump's copies of the tensors and its JSON
// text: beyond the weights it grows with B T (and T^2 when recording), so the error blames
// --batch or the longer of --seq and --tk.
void check_run_memory(const ForwardOpts& o, const MhaConfig& cfg, const BackendInfo& row, ForwardSizes sizes) {
    const AttentionCost cost =
        attention_cost(o.batch, std::max(o.seq, o.tk), o.d_model, cfg.heads, cfg.d_k, cfg.d_v, cfg.bias);
    sizes.records = row.records;
    sizes.backward = o.backward;
    sizes.backward_records = o.backward && row.backward_records;
    // Beyond the weights, memory grows with B T (and T^2 when recording): blame the larger of the two.
    // (B T, or B T² when recording: T counts twice), T being --tk's when the keys are the longer sequence.
    const double T_max = static_cast<double>(std::max(o.seq, o.tk));
    const char* T_opt = o.tk > o.seq ? "--tk" : "--seq";
    require_fits_in_memory((row.records ? T_max * T_max : T_max) >= static_cast<double>(o.batch) ? T_opt : "--batch",
                           forward_memory_bytes(sizes),
                           fmt::format("B={}, H={}, T={}{} ({} per (B, H, T, T) tensor{})", o.batch, cfg.heads, o.seq,
                                       o.tk != o.seq ? fmt::format(", Tk={}", o.tk) : std::string(),
                                       format_bytes(cost.bytes_score_matrix), o.dump.empty() ? "" : ", with the dump"));

}

// The inputs of the run, all from --seed (each its own stream) or from the --input file:
// x (B, T, D); for cross-attention x_kv (B, Tk, kdim) and x_v (B, Tk, vdim) when the values
// have their own input; with --backward dL/d out. The layer's weights are set here too.
struct ForwardTensors {
    Tensor x, x_kv, x_v, dout;
};
ForwardTensors build_forward_tensors(const ForwardOpts& o, const MhaConfig& cfg, bool cross, bool separate_v,
                                     const std::optional<Dump>& input, MultiHeadAttention& mha) {
    ForwardTensors ft;
    Tensor &x = ft.x, &x_kv = ft.x_kv, &x_v = ft.x_v, &dout = ft.dout;
    x = seeded_normal(Shape{o.batch, o.seq, o.d_model}, o.seed, kStreamX);
    // cross-attention: the other sequence x_kv (B, Tk, kdim), N(0, 1) from --seed's stream 3, and x_v from stream 4
    if (cross) {
        x_kv = seeded_normal(Shape{o.batch, o.tk, o.kdim}, o.seed, kStreamXkv);
        if (separate_v) x_v = seeded_normal(Shape{o.batch, o.tk, o.vdim}, o.seed, kStreamXv);
    }
    if (input) {
        x = input->tensors.at("x");
        if (cross) take_tensor(*input, "x_kv", x_kv, o.input);
        if (separate_v) take_tensor(*input, "x_v", x_v, o.input);
        take_tensor(*input, "W_q", mha.q_proj.W, o.input);
        take_tensor(*input, "W_k", mha.k_proj.W, o.input);
        take_tensor(*input, "W_v", mha.v_proj.W, o.input);
        take_tensor(*input, "W_o", mha.o_proj.W, o.input);
        if (cfg.bias) {
            take_tensor(*input, "b_q", mha.q_proj.b, o.input);
            take_tensor(*input, "b_k", mha.k_proj.b, o.input);
            take_tensor(*input, "b_v", mha.v_proj.b, o.input);
            take_tensor(*input, "b_o", mha.o_proj.b, o.input);
        }
    }

    // dL/d out for --backward: N(0, 1) from --seed (its own stream), or the --input file's dout
    if (o.backward) {
        dout = seeded_normal(Shape{o.batch, o.seq, cfg.d_model}, o.seed, kStreamDout);
        if (input) take_tensor(*input, "dout", dout, o.input);
    }

    return ft;
}

// --backward: every gradient of L = sum(out ∘ dout) (traced with --trace), checked finite: a
// non-finite one is the --input file's values overflowing float32, or a bug.
MhaGrads run_backward(const ForwardOpts& o, const MultiHeadAttention& mha, const ForwardRecord& rec, const Tensor& dout,
                      const Mask& mask, const AttentionOptions& aopt, Backend backend, bool from_input,
                      const TextOut& text, MhaBackwardRecord& brec) {
    TraceFn btrace = [&text](const TraceEvent& e) {
        text.print("  {:>10} = {:<58} {:<16} |.| = {:.4g}\n", e.name, e.formula, shape_str(e.shape),
                   e.value != nullptr ? tensor_norm(*e.value) : 0.0);
    };
    if (o.trace) text.print("backward: L = sum(out ∘ dout), each gradient dL/d(.) with its Frobenius norm\n");
    MhaGrads grads = mha.backward(rec, dout, mask, aopt, &brec, o.trace ? &btrace : nullptr, backend);
    std::string gbad;
    for (const auto& [name, t] : {std::pair<const char*, const Tensor&>{"dx", grads.dx}, {"dW_q", grads.dW_q},
                                  {"dW_k", grads.dW_k}, {"dW_v", grads.dW_v}, {"dW_o", grads.dW_o}})
        if (gbad.empty()) gbad = first_non_finite(name, t);
    if (!gbad.empty()) {
        if (from_input)
            throw InputError(fmt::format("--input: '{}': its values overflow float32 in the backward pass ({})",
                                         o.input, gbad));
        throw std::logic_error(
            fmt::format("the backward pass gave {} from finite inputs and options: a bug in attn", gbad));
    }
    return grads;
}

// --kv-heads must divide the heads; a value --input's config gave is blamed on the file, not on
// an option never typed.
void check_kv_heads(const ForwardOpts& o, const std::optional<Dump>& input) {
    if (o.kv_heads <= 0 || o.heads % o.kv_heads == 0) return;
    const InputError e(fmt::format("--kv-heads: must divide --heads {} (grouped-query attention: H = g·H_kv), got {}",
                                   o.heads, o.kv_heads));
    if (o.given("--kv-heads") || !input || !input->config.contains("kv_heads")) throw e;
    from_file(o.input, "kv_heads", [&]() -> int { throw e; });
}

// " rope=10000 alibi softcap=30" (with a leading space): the score options that are on, or "".
std::string score_options_text(const AttentionOptions& aopt) {
    std::string opt_text;
    if (aopt.rope) opt_text += fmt::format(" rope={:g}", aopt.rope_base);
    if (aopt.alibi) opt_text += " alibi";
    if (aopt.softcap > 0.0f) opt_text += fmt::format(" softcap={:g}", aopt.softcap);
    if (!opt_text.empty()) opt_text = " " + opt_text;
    return opt_text;
}

// A NaN or an infinity in the output or the weights, or a row whose weights do not sum to 1
// (row_sum_err), refused: overflow of large --input values (has_input), else a bug.
void refuse_non_finite(const ForwardOpts& o, bool has_input, const Tensor& out, const ForwardRecord& rec,
                       double row_sum_err) {
    std::string bad;
    for (const auto& [name, t] : {std::pair<const char*, const Tensor&>{"out", out}, {"weights", rec.attn.weights}})
        if (bad.empty()) bad = first_non_finite(name, t);
    if (bad.empty() && !(row_sum_err < 1e-3))  // NaN fails too
        bad = fmt::format("an attention row that sums to 1 +- {:.1e}", row_sum_err);
    if (!bad.empty()) {
        if (has_input)
            throw InputError(
                fmt::format("--input: '{}': its values overflow float32 in the forward pass ({})", o.input, bad));
        throw std::logic_error(
            fmt::format("the forward pass gave {} from finite inputs and options: a bug in attn", bad));
    }
}

int run_forward(ForwardOpts o) {
    // ---- validate everything before computing anything
    std::optional<Dump> input;
    std::optional<Mask> file_mask;  // the --input file's mask, which replaces --mask
    // Cross-attention when the keys come from another sequence: --tk, --kdim, --vdim, or x_kv in --input.
    bool cross = o.tk != 0 || o.kdim != 0 || o.vdim != 0;
    if (!o.input.empty()) file_mask = read_forward_input(o, input, cross);
    if (o.tk == 0) o.tk = o.seq;
    if (o.kdim == 0) o.kdim = o.d_model;
    if (o.vdim == 0) o.vdim = o.kdim;  // one x_kv for keys and values unless --vdim differs
    const bool separate_v = o.vdim != o.kdim;
    if (cross && o.backward)
        throw InputError("--backward: runs on self-attention only (the cross-attention gradients are in the library: "
                         "MultiHeadAttention::backward gives dquery, dkey, dvalue)");
    check_dropout(o.dropout, "--dropout");
    if (o.dropout_given && !o.train)
        throw InputError("--dropout: dropout acts in training mode only; add --train (or drop --dropout)");
    // The sizes are positive by now: what resolved() can still refuse is a head count that does not divide D.
    MhaConfig cfg = with_option(
        input && input->config.contains("heads") ? fmt::format("--input: '{}': config.heads", o.input) : "--heads",
        [&] { return MhaConfig{o.d_model, o.heads, o.d_k, o.d_v, !o.no_bias, o.kdim, o.vdim}.resolved(); });
    check_kv_heads(o, input);
    cfg.kv_heads = o.kv_heads > 0 ? o.kv_heads : cfg.heads;
    ForwardSizes sizes = check_weight_memory(o, cfg, cross);
    Mask mask = forward_mask(o, cfg, std::move(file_mask));
    AttentionOptions aopt;
    aopt.scale = parse_scale(o.scale);
    aopt.fill = parse_fill(o.fill);
    aopt.dropout = static_cast<float>(o.dropout);
    aopt.train = o.train;
    aopt.seed = mix64(o.seed ^ 0xd20dULL);
    take_score_options(o, cfg, aopt);
    const InitSpec init = parse_init(o.init);
    const Backend backend = backend_of(o.impl);
    const BackendInfo& row = backend_info(backend);
    check_forward_backend(o, cfg, aopt, mask, backend);
    const TextOut text({{"--dump -", o.dump == "-"}, o.json.claim()});  // a JSON on stdout: the text to stderr

    check_run_memory(o, cfg, row, sizes);

    // ---- build the layer and the input, all from --seed
    MultiHeadAttention mha(cfg);
    seed_layer(mha, init, o.seed);
    const ForwardTensors ft = build_forward_tensors(o, cfg, cross, separate_v, input, mha);
    const Tensor &x = ft.x, &x_kv = ft.x_kv, &x_v = ft.x_v, &dout = ft.dout;

    // ---- run
    // " H_kv=2", "  rope=10000 alibi softcap=30": only what is on
    const std::string kv_text = cfg.kv_heads != cfg.heads ? fmt::format(" H_kv={}", cfg.kv_heads) : "";
    const std::string opt_text = score_options_text(aopt);
    TraceFn trace = [&text](const TraceEvent& e) {
        text.print("  {:>9} = {:<46} {}\n", e.name, e.formula, shape_str(e.shape));
    };
    if (o.trace)
        text.print("attn forward: B={} T={} D={} H={}{} Dk={} Dv={}{}  mask={}  scale={}  fill={}{}  impl={}\n",
                   o.batch, o.seq, cfg.d_model, cfg.heads, kv_text, cfg.d_k, cfg.d_v, cross_sizes(cross, o),
                   mask.describe(), scale_name(aopt.scale), o.fill, opt_text, row.name);
    ForwardRecord rec;
    if (o.trace && aopt.rope)
        text.print(
            "  {:>9}   RoPE rotates Q_heads and K_heads (pairs d, d + Dk/2; angle pos·{:g}^(−2d/Dk)) before Q·Kᵀ\n", "",
            aopt.rope_base);
    const Tensor out =
        cross ? mha.forward(x, x_kv, separate_v ? x_v : x_kv, mask, aopt, &rec, o.trace ? &trace : nullptr, backend)
              : mha.forward(x, mask, aopt, &rec, o.trace ? &trace : nullptr, backend);
    // Every input and option is finite and in range by now, so a NaN or an infinity in the
    // result, or an attention row that does not sum to 1, is float32 overflow of large
    // --input values, or a bug: never printed as a result.
    const double row_sum_err = rec.attn.weights.empty() ? 0.0 : max_row_sum_error(rec.attn.weights, mask);
    refuse_non_finite(o, input.has_value(), out, rec, row_sum_err);

    // ---- backward
    MhaGrads grads;
    MhaBackwardRecord brec;
    if (o.backward) grads = run_backward(o, mha, rec, dout, mask, aopt, backend, input.has_value(), text, brec);

    // ---- report
    if (!o.trace) {
        text.print("attn forward: B={} T={} D={} H={}{} Dk={} Dv={}{}  mask={}{}  impl={}\n", o.batch, o.seq,
                   cfg.d_model, cfg.heads, kv_text, cfg.d_k, cfg.d_v, cross_sizes(cross, o), mask.describe(), opt_text,
                   row.name);
        text.print("  out {}  (first row: {:.4f} ...)\n", shape_str(out.shape),
                   fmt::join(out.data.begin(), out.data.begin() + std::min<int64_t>(4, out.numel()), ", "));
    }
    if (!rec.attn.weights.empty())
        text.print("  check: every attention row that can see a key sums to 1 (max |sum - 1| = {:.1e})\n", row_sum_err);
    if (o.backward && !o.trace) {
        text.print("  backward (dout ~ N(0, 1){}): gradient, shape, Frobenius norm\n",
                   input && input->tensors.count("dout") > 0 ? " from --input" : " from --seed");
        for (const auto& [name, t] : backward_tensors(grads, brec))
            text.print("    {:<12} {:<16} {:.4g}\n", name, shape_str(t->shape), tensor_norm(*t));
    }
    if (o.json.given())
        write_forward_json(o, cfg, aopt, mask, cross, out, row_sum_err, !rec.attn.weights.empty(), grads, brec, text);
    if (!o.dump.empty() || !o.html.file.empty()) {  // --html reads the weights, scores, mask and V from the dump
        const Dump d = forward_dump(o, cfg, aopt, mask, mha, rec, cross ? x_kv : Tensor(), separate_v ? x_v : Tensor(),
                                    grads, brec);
        if (!o.html.file.empty()) write_html_page(o.html, page_from_dump_rows(d, "attn forward"), text);
        if (o.dump.empty()) return 0;
        with_option("--dump", [&] { write_dump_file(o.dump, d, o.json_nonfinite); });
        if (o.dump != "-") text.print("  wrote {} ({} tensors)\n", o.dump, d.tensors.size());
    }
    return 0;
}

const Command forward_cmd{
    "forward",
    "Run multi-head attention once; --trace prints every step's shape, --dump writes all tensors (safetensors, npz or "
    "JSON)",
    10, [](CLI::App& sub) -> Runner {
        auto o = std::make_shared<ForwardOpts>();
        CLI::Option* batch =
            sub.add_option("--batch,-B", o->batch, "B, batch size")->capture_default_str()->check(integer_in(1));
        CLI::Option* batch_old = deprecated_alias(sub, "-b", "--batch", o->batch)->check(integer_in(1));
        CLI::Option* seq = sub.add_option("--seq,-T,--tq", o->seq, "T (Tq), sequence length (of the queries)")
                               ->capture_default_str()
                               ->check(integer_in(1));
        CLI::Option* seq_old = deprecated_alias(sub, "-t", "--seq", o->seq)->check(integer_in(1));
        sub.add_option(
               "--tk", o->tk,
               "cross-attention: Tk keys and values from another sequence x_kv (B, Tk, kdim), N(0, 1) from --seed "
               "(or from --input)")
            ->check(integer_in(1));
        sub.add_option("--kdim", o->kdim,
                       "cross-attention: width of x_kv, the key input (default D; W_k is [H*Dk, kdim])")
            ->check(integer_in(1));
        sub.add_option(
               "--vdim", o->vdim,
               "cross-attention: width of the value input (default kdim; a width other than kdim makes a separate "
               "x_v (B, Tk, vdim))")
            ->check(integer_in(1));
        CLI::Option* d_model =
            sub.add_option("--d-model,-d", o->d_model, "D, model width")->capture_default_str()->check(integer_in(1));
        sub.add_option("--heads,-H", o->heads, "H, number of heads")->capture_default_str()->check(integer_in(1));
        sub.add_option("--d-k", o->d_k, "Dk per head (default D/H)")->check(integer_in(1));
        sub.add_option("--d-v", o->d_v, "Dv per head (default Dk)")->check(integer_in(1));
        sub.add_option("--mask", o->mask,
                       "none | causal | pad:L1,L2,... | causal+pad:L1,... | window:W | window-causal:W | strided:S | "
                       "strided-causal:S | global-local:G,W | global-local-causal:G,W")
            ->capture_default_str();
        sub.add_option("--scale", o->scale,
                       fmt::format("sqrt (1/sqrt(Dk)) | none | NUMBER (multiply) | cosine | cosine:TAU; NUMBER and TAU "
                                   "in [{:g}, {:g}]",
                                   kMinScale, kMaxScale))
            ->capture_default_str();
        sub.add_option("--fill", o->fill,
                       fmt::format("value written into masked scores: -inf or a number in [{:g}, {:g}] such as -1e9",
                                   -kMaxFill, kMaxFill))
            ->capture_default_str();
        CLI::Option* dropout =
            sub.add_option("--dropout", o->dropout, "attention dropout probability P in [0, 1) (needs --train)")
                ->capture_default_str();
        sub.add_flag("--train", o->train, "training mode: apply dropout to the weights");
        sub.add_option(
               "--init", o->init,
               fmt::format("weight initialiser: {} (STD in [{:g}, {:g}])", kInitNames, kMinInitStd, kMaxInitStd))
            ->capture_default_str();
        sub.add_flag("--no-bias", o->no_bias, "projections without bias (C8)");
        sub.add_option("--kv-heads", o->kv_heads,
                       "H_kv, heads of K and V (default --heads); fewer is grouped-query attention, 1 multi-query: "
                       "query head h reads kv head h/(H/H_kv); must divide --heads")
            ->check(integer_in(1));
        sub.add_option(
               "--rope", o->rope,
               "rotary positions on Q and K (rotate-half, as Llama), base BASE (default 10000); Dk must be even")
            ->expected(0, 1)
            ->type_name("[BASE]");
        sub.add_flag("--alibi", o->alibi, "ALiBi: add -m_h·|i - j| to head h's scaled scores (the paper's slopes m_h)");
        sub.add_option("--window", o->window,
                       "sliding window of W keys, skipped by blocks in the tiled kernel: with --mask causal the "
                       "query and the W-1 keys before it (Mistral), otherwise |i-j| <= W/2")
            ->check(integer_in(1));
        sub.add_option("--softcap", o->softcap, "logit softcap C > 0: scaled scores -> C·tanh(scores/C) (Gemma 2)");
        sub.add_option("--impl", o->impl, backend_help("attention implementation"))
            ->check(backend_validator())
            ->type_name("IMPL")
            ->capture_default_str();
        sub.add_option("--seed", o->seed, "seed for weights, input and dropout")
            ->capture_default_str()
            ->check(seed_validator());
        sub.add_flag("--trace", o->trace, "print every step with its formula and shape");
        sub.add_flag("--backward", o->backward,
                     "also run the backward pass for dout ~ N(0, 1) from --seed (or dout from --input): every "
                     "gradient's shape and norm; with --trace formula by formula; with --dump all of them");
        add_json_nonfinite(
            sub, o->json_nonfinite,
            sub.add_option("--dump,-o,--output", o->dump,
                           "write every tensor to FILE: .safetensors, .npz (numpy) or .json (- for JSON on stdout)"));
        add_json_result(sub, o->json, "attn-forward: the config, the output's shape, norm and first row, each "
                                      "gradient's norm; --dump has every tensor");
        add_html_options(sub, o->html);
        sub.add_option(
            "--input", o->input,
            "read x (and any of W_q,b_q,...,W_o,b_o) from FILE instead of random ones: a dump (.json, "
            ".safetensors or .npz, as --dump writes) or FILE.npy (x alone, (B, T, D) or "
            "(T, D)); the file's config (heads, d_k, d_v, mask, scale, fill, init, dropout, train, bias) and mask "
            "tensor set the layer, and an option given beside it must agree with them");
        sub.add_option(
            "--mask-file", o->mask_file,
            "a boolean or additive mask [T, T], [B, T, T] or [B, H, T, T] (B, H may be 1) from .npy (bool/uint8: "
            "boolean; float: additive) or a dump (.json, .safetensors, .npz; tensor mask: boolean, additive_mask: "
            "additive); "
            "combined with --mask");
        o->given = [&sub](const char* name) { return sub.count(name) > 0; };
        return [o, batch, seq, batch_old, seq_old, d_model, dropout] {
            o->batch_given = batch->count() + batch_old->count() > 0;
            o->seq_given = seq->count() + seq_old->count() > 0;
            o->d_model_given = d_model->count() > 0;
            o->dropout_given = dropout->count() > 0;
            return run_forward(*o);
        };
    }};

}  // namespace
}  // namespace attn::cli
