// Links against the installed attn and runs one causal attention: prints the
// first row's weights and exits 0 only if that row is one-hot on key 0 and the
// flash backend, reached through the backend table, gives the same output.
#include <attn/attn.hpp>
#include <cstdio>

int main() {
    attn::Tensor q({1, 1, 3, 4}, 0.5f), k({1, 1, 3, 4}, 0.25f), v({1, 1, 3, 2}, 1.0f);
    attn::AttentionRecord rec;
    const attn::Tensor ref = attn::attention(attn::Backend::Reference, q, k, v, attn::Mask::make_causal(), {}, &rec);
    const attn::Tensor flash = attn::attention(attn::Backend::Flash, q, k, v, attn::Mask::make_causal(), {});
    std::printf("row 0: %g %g %g; max |flash - reference| = %g\n", rec.weights.data[0], rec.weights.data[1],
                rec.weights.data[2], attn::max_abs_diff(flash, ref));
    return rec.weights.data[0] == 1.0f && rec.weights.data[1] == 0.0f && attn::max_abs_diff(flash, ref) < 1e-6 ? 0 : 1;
}
