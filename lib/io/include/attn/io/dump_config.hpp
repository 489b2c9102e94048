// attn/io/dump_config.hpp: the schema of a dump's "config" and mask tensors, read
// back checked: what `attn forward --input` takes from a dump that `--dump` wrote.
//
// config keys (each optional; a key the schema does not know is refused):
//   batch, seq, d_model        B, T, D; each must equal tensor x's dims when x is there
//   heads, d_k, d_v, kv_heads  sizes in [1, kMaxDumpSize]
//   scale, init, mask          the command line's spellings ("0.5", "xavier", "causal", "custom")
//   fill                       a number, or the string "-inf"
//   rope                       false, or the base (a number)
//   alibi, bias, train         true or false
//   softcap                    a number >= 0 (0: off)
//   dropout                    a number in [0, 1)
//   impl, backward, window, mask_file, tk, kdim, vdim, generator, source, seed
//                              written for the record only (the tensors hold what they say);
//                              window only beside mask "custom", whose tensor holds it
// tensors "mask" [B|1, T, Tk] or per head [B|1, H, T, Tk], 0 (masked) or 1 (may attend);
//         "additive_mask", the same shapes, finite values or -inf, added to the scores.
//
// Every error is an InputError that names the field first: "config.heads: must be an
// integer in [1, 2147483647]", "tensor mask: has shape [2, 3], expected ...". The
// caller names the file (and maps fields to its options).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "attn/core/mask.hpp"
#include "attn/io/dump.hpp"

namespace attn {

// The largest size a dump's config holds (2^31 - 1), as the command line's sizes.
inline constexpr int64_t kMaxDumpSize = 2147483647;

// What a dump's config says about the layer it ran. A key the config lacks is nullopt.
struct DumpLayerConfig {
    std::optional<int64_t> batch, seq, d_model, heads, d_k, d_v, kv_heads;
    // The spellings of the command line's values, unparsed (the app's parsers read
    // them); fill is "-inf" or the number as text ("-1000000000").
    std::optional<std::string> scale, fill, init, mask;
    std::optional<bool> rope;  // false: off; true: on, with rope_base
    double rope_base = 0;
    std::optional<bool> alibi, bias, train;
    std::optional<double> softcap;  // >= 0 (0: off)
    std::optional<double> dropout;  // in [0, 1)
    bool window = false;            // "window" is there (only beside mask "custom")
};

// Reads and checks d.config against the schema above (and batch, seq, d_model
// against tensor x, when d has one). Throws InputError "config.KEY: RULE".
DumpLayerConfig read_dump_config(const Dump& d);

// The dump's mask tensors for B batch rows, H heads, T queries and Tk keys, each
// nullopt when the dump lacks it: "mask" as a boolean mask, "additive_mask" as an
// additive one (per head when the tensor has rank 4). Throws InputError
// "tensor mask: RULE" or "tensor additive_mask: RULE".
struct DumpMasks {
    std::optional<Mask> allowed, additive;
};
DumpMasks read_dump_masks(const Dump& d, int64_t B, int64_t H, int64_t T, int64_t Tk);

// Element k of `t` with its index, for messages: "x[0, 2, 5] = nan".
std::string tensor_element(std::string_view name, const Tensor& t, size_t k);

}  // namespace attn
