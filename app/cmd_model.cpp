// `attn model`: pretrained models run in C++, their heads read. The verbs are grouped by family, one
// file each (app/cmd_model.hpp): the shared verbs over any model (attention, entropy, probe), the
// encoder's (embed, bench), a decoder's predictions (next, generate) and its insides (induction,
// cache, ablate, heads), and fetch.
#include <memory>

#include "cmd_model.hpp"
#include "command.hpp"
#include "model_fetch.hpp"

namespace attn::cli {
namespace {

const Command model_cmd{
    "model",
    "Real heads: run pretrained models in C++ and read their attention: the all-MiniLM-L6-v2 encoder and "
    "GPT-2-family decoders (C32, C34)",
    50, [](CLI::App& sub) -> Runner {
        sub.require_subcommand(1);
        sub.footer("The encoder is all-MiniLM-L6-v2: `attn model fetch` downloads it once to the per-user data "
                   "folder (~/.local/share/attn/models), where attn finds it from any folder. The decoder commands "
                   "read data/decoders/macbeth-char without --model (induction: data/decoders/induction-2l; attn "
                   "ships both), or any GPT-2 folder given with --model.");
        // in this order in --help: attention, entropy, probe, bench, embed, next, generate, induction, cache,
        // ablate, heads, fetch
        const std::vector<ModelRunner> families = {add_attention_subcommands(sub), add_embed_subcommands(sub),
                                                   add_generate_subcommands(sub), add_circuit_subcommands(sub),
                                                   add_model_fetch(sub)};
        return [families] {
            for (const ModelRunner& run : families)
                if (const std::optional<int> rc = run()) return *rc;
            throw InputError("model: name a subcommand: attention, entropy, probe, bench, embed, next, generate, "
                             "induction, cache, ablate, heads or fetch");
        };
    }};

}  // namespace
}  // namespace attn::cli
