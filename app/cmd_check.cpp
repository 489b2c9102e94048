// `attn check FILE`: reads a learner's attention (inputs and any of the intermediates),
// recomputes every stage with the reference, prints the stage table and the first stage
// that diverges, and names the known mistake that reproduces it (lib/check).
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "attn/check/check.hpp"
#include "attn/core/errors.hpp"
#include "command.hpp"
#include "options.hpp"
#include "parse.hpp"

namespace attn::cli {
namespace {

struct CheckOpts {
    std::string file, mask, scale;
    std::optional<int64_t> heads, kv_heads;
    JsonOut json;
};

// The settings given on the command line; the file's config fills the rest.
check::CheckSettings settings_of(const CheckOpts& o) {
    check::CheckSettings s;
    s.heads = o.heads;
    s.kv_heads = o.kv_heads;
    if (!o.scale.empty()) {
        const Scale sc = parse_scale(o.scale);
        if (sc.kind == ScaleKind::Cosine)
            throw InputError("--scale: attn check compares the dot-product scales: sqrt, none or a number");
        s.scale = sc;
    }
    if (!o.mask.empty()) s.mask = with_option("--mask", [&] { return check::parse_mask_spec(o.mask); });
    return s;
}

// Runs `f`, which reads the file: its errors name the file once, and a rule of --mask given on
// the command line names the option ("--mask: 3 padding lengths for a batch of 2").
template <class F>
auto named_file(const CheckOpts& o, F&& f) -> decltype(f()) {
    try {
        return f();
    } catch (const InputError& e) {
        const std::string what = e.what();
        if (!o.mask.empty() && what.rfind("mask: ", 0) == 0) throw InputError("--" + what);
        if (what.rfind(o.file, 0) == 0) throw;
        throw InputError(fmt::format("{}: {}", o.file, what));
    }
}

int run_check(const CheckOpts& o) {
    require_json_writable(o.json);
    const check::CheckSettings s = settings_of(o);
    const TextOut text({o.json.claim()});
    const check::LearnerFile lf = named_file(o, [&] { return check::read_learner_file(o.file, s); });
    if (lf.stages.empty())
        throw InputError(fmt::format("{}: holds the inputs but none of the stages Q, K, V, scores, scores_scaled, "
                                     "scores_masked, weights, head_out, merged, out: nothing to check",
                                     o.file));
    const check::CheckReport r = check::check_problem(lf.problem, lf.stages);
    if (o.json.given()) write_json(o.json, check::report_json(r), "attn-check", 1);
    if (!o.json.to_stdout()) {
        const check::Problem& p = lf.problem;
        text.print("{}: heads {}, kv heads {}, scale {}, mask {}\n", o.file, p.heads, p.kv_heads, scale_name(p.scale),
                   check::mask_spec_name(p.mask));
        text.print("{}", check::report_text(r));
    }
    return r.first_divergence.empty() ? 0 : 3;
}

Command check_cmd{"check", "Check your own attention: the stage that diverges from the reference, and why", 55,
            [](CLI::App& sub) -> Runner {
                auto o = std::make_shared<CheckOpts>();
                sub.footer(
                    "FILE (.npz, .safetensors or attn-dump .json) holds the inputs: x with W_q, W_k, W_v (and W_o,\n"
                    "b_*; nn.Linear's [out, in]), or Q, K, V directly; and any of your intermediates Q, K, V,\n"
                    "scores, scores_scaled, scores_masked, weights, head_out, merged, out (the dump's names and\n"
                    "layouts, docs/formats.md). Each stage is compared with the reference within 1e-4 (float32)\n"
                    "or 1e-5 (float64) of its largest entry; the first stage that diverges is checked against a\n"
                    "catalogue of known mistakes. Exit 0: every stage matches; 3: a stage diverges; 2: bad input.\n"
                    "Settings the shapes cannot tell come from the options or the file's config (attn exercise).");
                sub.add_option("file", o->file, "the file with your tensors")->required();
                sub.add_option("--heads,-H", o->heads, "H, number of query heads (default: the file's config, "
                                                       "or the heads of your Q)")
                    ->check(integer_in(1));
                sub.add_option("--kv-heads", o->kv_heads, "H_kv, heads of K and V (grouped-query attention)")
                    ->check(integer_in(1));
                sub.add_option("--mask", o->mask, "none | causal | pad:L1,L2,... | causal+pad:L1,... (default: "
                                                  "the file's config, else none)");
                sub.add_option("--scale", o->scale, "sqrt (1/sqrt(Dk)) | none | a NUMBER (default: the file's "
                                                    "config, else sqrt)");
                add_json(sub, o->json, "attn-check");
                return [o] { return run_check(*o); };
            }};

}  // namespace
}  // namespace attn::cli
