// `attn view FILE.json`: draws the attention weights of a dump as heatmaps in
// the terminal, and with --svg as an SVG picture: "weights" [B, H, T, T] of
// `attn forward --dump`, or one layer (--layer) of "attention" [layers, B, H,
// T, T] of `attn model attention --dump`. Rows are queries, columns keys;
// labels are the dump's tokens (config "tokens": [T] or [B][T] strings) or
// positions.
#include <algorithm>
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "attn/io/dump.hpp"
#include "attn/io/dump_file.hpp"
#include "attn/core/errors.hpp"
#include "attn/viz/heatmap.hpp"
#include "attn/core/mask.hpp"
#include "attn/core/stats.hpp"
#include "command.hpp"
#include "html_page.hpp"
#include "memory.hpp"
#include "options.hpp"

namespace attn::cli {
namespace {

struct ViewOpts {
    std::string file, svg;
    int64_t batch = 0;
    std::optional<int64_t> head, layer;
    bool no_color = false;
    HtmlOpts html;
};

// Token labels for batch row b, if the dump carries them and they fit T.
std::vector<std::string> token_labels(const nlohmann::json& config, int64_t b, int64_t T) {
    if (!config.is_object() || !config.contains("tokens")) return {};
    const auto& tok = config["tokens"];
    if (!tok.is_array() || tok.empty()) return {};
    const nlohmann::json* row = &tok;
    if (tok[0].is_array()) {
        if (b >= static_cast<int64_t>(tok.size())) return {};
        row = &tok[static_cast<size_t>(b)];
    }
    if (static_cast<int64_t>(row->size()) != T) return {};
    std::vector<std::string> out;
    for (const auto& t : *row) {
        if (!t.is_string()) return {};
        out.push_back(t.get<std::string>());
    }
    return out;
}

// Batch row b of the dump's boolean mask [B or 1, T, T] (1 = may attend) as a
// one-row attn::Mask, so the statistics skip keys the model could not use.
Mask dump_mask(const Dump& d, int64_t B, int64_t b, int64_t T) {
    auto it = d.tensors.find("mask");
    if (it == d.tensors.end()) return Mask::none();
    const Tensor& m = it->second;
    if (m.rank() != 3 || m.dim(1) != T || m.dim(2) != T || (m.dim(0) != B && m.dim(0) != 1)) return Mask::none();
    std::vector<uint8_t> allowed(m.data.size());
    std::transform(m.data.begin(), m.data.end(), allowed.begin(), [](float x) -> uint8_t { return x != 0.0f; });
    const Mask all = Mask::custom(m.dim(0), T, T, std::move(allowed));
    const MaskRow row = all.row(b, T);
    std::vector<uint8_t> row_b(static_cast<size_t>(T * T));
    for (int64_t i = 0; i < T; ++i)
        for (int64_t j = 0; j < T; ++j) row_b[static_cast<size_t>(i * T + j)] = row.allowed(i, j) ? 1 : 0;
    return Mask::custom(1, T, T, std::move(row_b));
}

// The weights to draw, [B, H, T, T]: the dump's "weights", or one layer of a model's "attention"
// (then `layer_label` is "layer L of N, ").
Tensor weights_to_draw(const Dump& d, const ViewOpts& o, std::string& layer_label) {
    Tensor w;
    if (auto it = d.tensors.find("weights"); it != d.tensors.end()) {
        if (o.layer)
            throw InputError(
                fmt::format("--layer: {} holds one layer (\"weights\" [B, H, T, T]); --layer picks a layer "
                            "of `attn model attention --dump`",
                            o.file));
        w = it->second;
    } else if (auto at = d.tensors.find("attention"); at != d.tensors.end()) {
        const Tensor& a = at->second;
        if (a.rank() != 5 || a.dim(3) != a.dim(4) || a.numel() == 0)
            throw InputError(fmt::format("{}: \"attention\" has shape {}, expected [layers, B, H, T, T] with T > 0",
                                         o.file, shape_str(a.shape)));
        const int64_t L = a.dim(0), layer = o.layer.value_or(0);
        if (layer < 0 || layer >= L)
            throw InputError(
                fmt::format("--layer: must be in 0..{} for {} ({} layers), got {}", L - 1, o.file, L, layer));
        w = Tensor({a.dim(1), a.dim(2), a.dim(3), a.dim(4)});
        const auto first = a.data.begin() + layer * w.numel();
        std::copy(first, first + w.numel(), w.data.begin());
        layer_label = fmt::format("layer {} of {}, ", layer, L);
    } else {
        throw InputError(
            fmt::format("{}: no \"weights\" tensor [B, H, T, T] (`attn forward --dump FILE`) and no "
                        "\"attention\" [layers, B, H, T, T] (`attn model attention --dump FILE`)",
                        o.file));
    }
    return w;
}

int run_view(const ViewOpts& o) {
    // ---- validate the file and the selection before drawing anything
    require_dump_fits_in_memory(o.file, o.file);
    const Dump d = read_dump_any(o.file);  // .json, .safetensors or .npz
    std::string layer_label;  // "layer L of N, " for a model dump
    const Tensor w = weights_to_draw(d, o, layer_label);  // [B, H, T, T]
    if (w.rank() != 4 || w.dim(2) != w.dim(3) || w.numel() == 0)
        throw InputError(fmt::format("{}: \"weights\" has shape {}, expected [B, H, T, T] with T > 0", o.file,
                                     shape_str(w.shape)));
    const int64_t B = w.dim(0), H = w.dim(1), T = w.dim(2);
    // Attention weights are probabilities: each in [0, 1] (a NaN, an infinity, -1 or 1e38 would print
    // as an entropy of nan or -inf nats). A row's sum is not checked: dropout scales the kept weights.
    for (size_t k = 0; k < w.data.size(); ++k)
        if (!(w.data[k] >= 0.0f && w.data[k] <= 1.0f))
            throw InputError(fmt::format("{}: the attention weights must each be in [0, 1], got {} at flat index {}",
                                         o.file, w.data[k], k));
    if (o.batch < 0 || o.batch >= B)
        throw InputError(fmt::format("--batch: must be in 0..{} for {} (B = {}), got {}", B - 1, o.file, B, o.batch));
    if (o.head && (*o.head < 0 || *o.head >= H))
        throw InputError(fmt::format("--head: must be in 0..{} for {} (H = {}), got {}", H - 1, o.file, H, *o.head));

    check_html(o.html);
    if (!o.svg.empty()) {
        require_writable("--svg", o.svg);
        // The dump's tensors, now in memory, and every cell of the selected heads drawn.
        double held = 0;
        for (const auto& [name, t] : d.tensors) held += 4.0 * static_cast<double>(t.numel());
        const double cells = static_cast<double>(o.head ? 1 : H) * static_cast<double>(T) * static_cast<double>(T);
        require_fits_in_memory("--svg", kProgramBytes + held + cells * kSvgBytesPerCell,
                               fmt::format("drawing {} heatmap cells", cells));
    }
    const TextOut text({{"--svg -", o.svg == "-"}});  // with --svg -, the SVG has stdout and the heatmaps stderr
    std::ostream& out = text.stream();
    const auto labels = token_labels(d.config, o.batch, T);
    const Mask mask = dump_mask(d, B, o.batch, T);
    // the statistics of the drawn batch row only: weights [1, H, T, T]
    Tensor wb({1, H, T, T});
    std::copy(w.data.begin() + o.batch * H * T * T, w.data.begin() + (o.batch + 1) * H * T * T, wb.data.begin());
    const auto stats = head_stats(wb, mask);
    const int64_t h0 = o.head ? *o.head : 0, h1 = o.head ? *o.head + 1 : H;

    // ---- one panel per selected head
    std::vector<HeatmapPanel> panels;
    for (int64_t h = h0; h < h1; ++h) {
        const float* p = w.ptr() + (o.batch * H + h) * T * T;
        panels.push_back(make_panel(fmt::format("batch {}, head {}", o.batch, h), p, T, T, labels, labels));
    }

    HeatmapStyle st;
    st.color = text.color(o.no_color);
    out << fmt::format("{}: weights {} [B, H, T, T]; {}batch {}, {}{}\nrows are queries, columns keys\n", o.file,
                             shape_str(w.shape), layer_label, o.batch,
                             o.head ? "head " + std::to_string(*o.head) : fmt::format("all {} heads", H),
                             mask.is_none() ? "" : " (mask from the dump)");
    // the terminal shows at most kShow queries and keys (2 columns a cell fit
    // 100 columns); the SVG always has all of them
    constexpr int64_t kShow = 40;
    const int64_t shown = std::min(T, kShow);
    if (shown < T)
        out << fmt::format("(T = {}: the terminal shows the first {} queries and keys; --svg FILE draws all)\n", T,
                                 shown);
    for (size_t k = 0; k < panels.size(); ++k) {
        const auto& s = stats[static_cast<size_t>(h0) + k];
        HeatmapPanel view = panels[k];
        if (shown < T) {
            view.rows = view.cols = shown;
            view.values.clear();
            for (int64_t i = 0; i < shown; ++i)
                for (int64_t j = 0; j < shown; ++j)
                    view.values.push_back(panels[k].values[static_cast<size_t>(i * T + j)]);
            if (!view.row_labels.empty()) view.row_labels.resize(static_cast<size_t>(shown));
            if (!view.col_labels.empty()) view.col_labels.resize(static_cast<size_t>(shown));
        }
        // colours span 0 .. the panel's largest weight, so near-uniform rows still show their structure
        HeatmapStyle vs = st;
        vs.vmin = 0;
        vs.vmax = 0;
        for (float x : view.values) vs.vmax = std::max(vs.vmax, double(x));
        if (!(vs.vmax > 0)) vs.vmax = 1;
        out << "\n" << render_heatmap(view, vs);
        out << fmt::format("  mean entropy {:.3f} nats ({:.2f} of uniform), mean max weight {:.3f}, "
                                 "effective keys {:.2f} (over {} rows)\n",
                                 s.mean_entropy_nats, s.mean_normalized_entropy, s.mean_max_weight,
                                 s.mean_effective_keys, s.rows);
    }
    if (!o.svg.empty()) {
        SvgOptions so;
        so.title = fmt::format("Attention weights from {}", o.file);
        so.subtitle = fmt::format("{}batch {}, {}; rows are queries, columns are keys; weights {}", layer_label,
                                  o.batch, o.head ? "head " + std::to_string(*o.head) : fmt::format("all {} heads", H),
                                  shape_str(w.shape));
        with_option("--svg", [&] { write_file_atomic(o.svg, heatmap_svg(panels, so)); });
        if (o.svg != "-")
            out << fmt::format("\n  wrote {} ({} heatmap{})\n", o.svg, panels.size(), panels.size() == 1 ? "" : "s");
    }
    if (!o.html.file.empty()) write_html_page(o.html, page_from_dump(d, o.file, o.batch), text);
    return 0;
}

const Command view_cmd{"view", "Draw a dump's attention weights as heatmaps (terminal, --svg FILE)", 30,
                  [](CLI::App& sub) -> Runner {
                      auto o = std::make_shared<ViewOpts>();
                      sub.add_option("file", o->file,
                                     "A dump as attn writes it, .json, .safetensors or .npz: \"weights\" [B, H, T, T] "
                                     "(attn forward --dump) or \"attention\" [layers, B, H, T, T] (attn model "
                                     "attention --dump)")
                          ->required();
                      sub.add_option("--layer", o->layer, "Layer to draw from a model dump (default 0)");
                      sub.add_option("--batch", o->batch, "Batch row to draw")->capture_default_str();
                      sub.add_option("--head", o->head, "Draw only this head (default: every head)");
                      sub.add_option(
                          "--svg", o->svg,
                          "Also write the heatmaps to this SVG file (- for stdout: the text goes to stderr)");
                      sub.add_flag("--no-color", o->no_color, "No ANSI colour");
                      add_html_options(sub, o->html);
                      return [o] { return run_view(*o); };
                  }};

}  // namespace
}  // namespace attn::cli
