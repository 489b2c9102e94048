// app/memory.hpp: how much memory attn may use here, and how much a run needs.
//
// The memory guard (require_fits_in_memory in options.hpp) refuses a run whose
// estimate exceeds kMemoryHeadroom of the smallest of:
//   - the machine's physical memory,
//   - the cgroup's limit: memory.max (cgroup v2) of the process's cgroup and of
//     each cgroup above it, or memory.limit_in_bytes (v1); "max" = no limit,
//   - RLIMIT_AS (ulimit -v), when set.
// A container with a 1 GiB cgroup on a 64 GiB machine may use 1 GiB: past it the
// kernel's OOM killer ends the process with no message. The headroom leaves room
// for what the estimates do not count: the program itself, the allocator's slack,
// other processes in the same cgroup, the page cache the cgroup is charged for.
//
// The estimates below count what the commands really allocate, calibrated with
// the peak RSS (VmHWM) of runs in tests/test_memory.cpp: the estimate is at least
// the measured peak and at most twice it at moderate sizes.
#pragma once

#include <cstdint>
#include <string>

namespace attn::cli {

// The share of the limit a run may plan to use.
inline constexpr double kMemoryHeadroom = 0.6;

struct MemoryLimit {
    double bytes = 0;    // 0: unknown (no limit is applied)
    std::string source;  // "physical memory", "cgroup memory.max", "cgroup memory.limit_in_bytes", "RLIMIT_AS"
};

// The smallest limit, read from `cgroup_root` (the cgroup file system, normally
// /sys/fs/cgroup) and `proc_self_cgroup` (normally /proc/self/cgroup, which names
// the process's cgroup). Both are parameters so tests can give fake files.
// `physical` is the machine's memory (0: unknown); `rlimit_as` the address-space
// limit (0: none).
MemoryLimit memory_limit(const std::string& cgroup_root, const std::string& proc_self_cgroup, double physical,
                         double rlimit_as);
// The limit of this process, from the real files.
MemoryLimit memory_limit_here();

// Bytes a program of attn occupies before it allocates anything for the run
// (code, libraries, the allocator's arenas), measured as the peak RSS of a tiny run.
inline constexpr double kProgramBytes = 24.0 * 1024 * 1024;

// Sizes of one `attn forward` run, counted as it allocates.
struct ForwardSizes {
    int64_t batch = 0, seq = 0, d_model = 0, heads = 0, d_k = 0, d_v = 0;
    bool bias = true, records = true, dropout = false, dump = false;
    // --backward: the gradients of every activation and weight; backward_records when
    // the backend's backward forms (B, H, T, T) tensors (the reference: 8 more).
    bool backward = false, backward_records = false;
    // Grouped-query attention: W_k, W_v hold kv_heads heads (0: heads); cross-attention:
    // W_k reads kdim features, W_v vdim (0: d_model), as nn.MultiheadAttention.
    int64_t kv_heads = 0, kdim = 0, vdim = 0;
};
// Weights only: the first thing to refuse when they alone do not fit.
double forward_weight_bytes(const ForwardSizes& s);
// The whole run: weights, activations, the recorded (B, H, T, T) tensors, and
// with a dump the copies of every tensor in it plus the JSON text.
double forward_memory_bytes(const ForwardSizes& s);
// The floats a forward dump holds (every tensor of the run and the mask).
double forward_dump_floats(const ForwardSizes& s);

// Bytes of one heatmap cell while the SVG is built: the text is about 110 bytes a
// cell (a <rect> with position, colour and a <title> "query → key: 0.123"), and
// the peak RSS of writing it is about 330 (the writer grows its text by doubling,
// so old and new text coexist); measured in tests/test_memory.cpp.
inline constexpr double kSvgBytesPerCell = 400;

// `attn model attention` on T tokens: the weights (the file, `weights_file`
// bytes, the model built from it and its pre-transposed copies), the attention [layers][1, heads, T, T]
// of the forward pass and its working memory, and what --dump (a copy, then the
// JSON text) and --svg (every cell of every head drawn) add.
double model_attention_bytes(double weights_file, int64_t layers, int64_t heads, int64_t hidden, int64_t T, bool dump,
                             bool svg);
// `attn model embed`, one padded batch of B sentences of T tokens at a time: the
// weights as above, and per batch the activations (16 floats a token and hidden
// unit) and the scores of one layer, (B, heads, T, T) (no layer's weights are kept).
// Peak RSS measured (all-MiniLM-L6-v2, 1 thread): 229 MB for B = 64, T = 27 (estimate
// 296 MB) and for B = 8, T = 322 (estimate 355 MB): the weights dominate.
double model_embed_bytes(double weights_file, int64_t heads, int64_t hidden, int64_t B, int64_t T);
// What `attn model embed` keeps for all its N sentences beside the batches (`text_bytes` of
// text in all): the text read and its copies per sentence, the token ids (at most a token a
// byte, plus [CLS] and [SEP]), the embeddings (N, hidden) and, with --json, the document made
// of them (about 120 bytes a float, its JSON values held three times over and its text; see
// memory.cpp for the measurements). Known before any sentence is
// tokenized, so a run too large for the machine is refused before that work.
double model_embed_texts_bytes(double text_bytes, int64_t N, int64_t hidden, bool json);

}  // namespace attn::cli
