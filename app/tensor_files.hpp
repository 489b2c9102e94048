// app/tensor_files.hpp: tensors and masks that commands read from files.
//
// `--input F` (attn forward) reads one of three formats, told apart by the name:
//   F.npy          one array (numpy's .npy, attn/io/npy.hpp): x, (B, T, D) or (T, D)
//                  (then B = 1); float32 or float64
//   F.safetensors  named tensors with the names of the dump format (x, x_kv, W_q,
//                  b_q, ..., mask, additive_mask, dout); float dtypes, and BOOL or U8
//                  (0/1) for a mask; the __metadata__ entry "config", a JSON object,
//                  is read as a dump's config
//   anything else  attn-dump JSON (attn/io/dump.hpp)
// `--mask-file F`: a boolean or float tensor [Tq, Tk], [B, Tq, Tk] or [B, H, Tq, Tk]
// (B and H may be 1: they broadcast):
//   F.npy          '|b1' or '|u1' -> boolean (1 = may attend); '<f4' or '<f8' -> additive
//                  (added to the scaled scores, PyTorch's float attn_mask; -inf allowed)
//   otherwise      an attn-dump JSON file holding a tensor "mask" (0 or 1: boolean) or
//                  "additive_mask" (float: additive), not both
// Every defect is an InputError naming the option, the file and the rule.
#pragma once

#include <cstdint>
#include <string>

#include "attn/attn.hpp"
#include "attn/io/dump_file.hpp"
#include "attn/io/safetensors.hpp"

namespace attn::cli {

// The tensors (and config) of an --input file in any of the three formats.
Dump read_tensor_file(const std::string& opt, const std::string& path);

// A mask file for scores [B, H, Tq, Tk]; `opt` names the option in messages.
Mask read_mask_file(const std::string& opt, const std::string& path, int64_t B, int64_t H, int64_t Tq, int64_t Tk);

// True when `path` ends with `ext` (".npy").
bool has_extension(const std::string& path, std::string_view ext);

}  // namespace attn::cli
