// Links against the installed attn and runs one causal attention: prints the
// first row's weights and exits 0 only if that row is one-hot on key 0.
#include <attn/attn.hpp>
#include <cstdio>

int main() {
    attn::Tensor q({1, 1, 3, 4}, 0.5f), k({1, 1, 3, 4}, 0.25f), v({1, 1, 3, 2}, 1.0f);
    attn::AttentionRecord rec;
    attn::attention_reference(q, k, v, attn::Mask::make_causal(), attn::AttentionOptions{}, &rec);
    std::printf("row 0: %g %g %g\n", rec.weights.data[0], rec.weights.data[1], rec.weights.data[2]);
    return rec.weights.data[0] == 1.0f && rec.weights.data[1] == 0.0f ? 0 : 1;
}
