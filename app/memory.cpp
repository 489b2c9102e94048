// How much memory attn may use, and what a forward run needs (see memory.hpp).
#include "memory.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <sys/resource.h>
#include <unistd.h>
#include <vector>

#include "attn/io/dump.hpp"

namespace attn::cli {
namespace {

// A cgroup limit file: a byte count, or "max" (none). v1 writes "no limit" as a
// huge number (9223372036854771712): anything from 2^60 up counts as none.
double read_limit_file(const std::string& path) {
    std::ifstream f(path);
    std::string word;
    if (!(f >> word) || word == "max") return 0;
    char* end = nullptr;
    errno = 0;
    const unsigned long long v = std::strtoull(word.c_str(), &end, 10);
    if (errno != 0 || *end != '\0' || v == 0 || v >= (1ULL << 60)) return 0;
    return static_cast<double>(v);
}

// The cgroup paths of this process from /proc/self/cgroup: "0::/a/b" (v2) and,
// for v1, the line whose controllers include "memory" ("4:memory:/a/b").
void cgroup_paths(const std::string& proc_self_cgroup, std::string& v2, std::string& v1_memory) {
    std::ifstream f(proc_self_cgroup);
    std::string line;
    while (std::getline(f, line)) {
        const size_t a = line.find(':'), b = a == std::string::npos ? a : line.find(':', a + 1);
        if (b == std::string::npos) continue;
        const std::string controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
        if (line.substr(0, a) == "0" && controllers.empty()) v2 = path;
        std::stringstream list(controllers);
        for (std::string c; std::getline(list, c, ',');)
            if (c == "memory") v1_memory = path;
    }
}

// The smallest limit in `file` of the cgroup `path` under `root` and of every cgroup above it.
double smallest_on_path(const std::string& root, std::string path, const std::string& file) {
    double smallest = 0;
    for (;;) {
        const double v = read_limit_file(root + (path == "/" ? "" : path) + "/" + file);
        if (v > 0 && (smallest == 0 || v < smallest)) smallest = v;
        if (path.empty() || path == "/") break;
        const size_t slash = path.rfind('/');
        path = slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
    }
    return smallest;
}

void take_smaller(MemoryLimit& m, double bytes, const char* source) {
    if (bytes > 0 && (m.bytes == 0 || bytes < m.bytes)) m = {bytes, source};
}

}  // namespace

MemoryLimit memory_limit(const std::string& cgroup_root, const std::string& proc_self_cgroup, double physical,
                         double rlimit_as) {
    MemoryLimit m;
    take_smaller(m, physical, "physical memory");
    std::string v2 = "/", v1 = "/";
    cgroup_paths(proc_self_cgroup, v2, v1);
    // In a container the cgroup namespace makes the process's own cgroup "/", the root
    // of what is mounted; outside one the path leads down from the host's root.
    take_smaller(m, smallest_on_path(cgroup_root, v2, "memory.max"), "cgroup memory.max");
    take_smaller(m, smallest_on_path(cgroup_root + "/memory", v1, "memory.limit_in_bytes"),
                 "cgroup memory.limit_in_bytes");
    take_smaller(m, rlimit_as, "RLIMIT_AS");
    return m;
}

MemoryLimit memory_limit_here() {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    const double physical = pages > 0 && page > 0 ? static_cast<double>(pages) * static_cast<double>(page) : 0.0;
    struct rlimit rl {};
    const double as =
        ::getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY ? static_cast<double>(rl.rlim_cur) : 0;
    return memory_limit("/sys/fs/cgroup", "/proc/self/cgroup", physical, as);
}

double forward_weight_bytes(const ForwardSizes& s) {
    // W_q [H Dk, D], W_k [Hkv Dk, kdim], W_v [Hkv Dv, vdim], W_o [D, H Dv] and their biases
    const double D = static_cast<double>(s.d_model), Dk = static_cast<double>(s.d_k), Dv = static_cast<double>(s.d_v),
                 H = static_cast<double>(s.heads), Hkv = static_cast<double>(s.kv_heads > 0 ? s.kv_heads : s.heads),
                 kdim = static_cast<double>(s.kdim > 0 ? s.kdim : s.d_model),
                 vdim = static_cast<double>(s.vdim > 0 ? s.vdim : s.d_model);
    const double w = H * Dk * D + Hkv * Dk * kdim + Hkv * Dv * vdim + D * H * Dv;
    return 4.0 * (w + (s.bias ? H * Dk + Hkv * Dk + Hkv * Dv + D : 0.0));
}

double forward_dump_floats(const ForwardSizes& s) {
    const double B = static_cast<double>(s.batch), T = static_cast<double>(s.seq), D = static_cast<double>(s.d_model),
                 H = static_cast<double>(s.heads), Dk = static_cast<double>(s.d_k), Dv = static_cast<double>(s.d_v);
    const double tt = B * H * T * T;
    double n = forward_weight_bytes(s) / 4.0;
    n += 2.0 * B * T * D;                        // x, out
    n += B * T * T;                              // mask
    n += 2.0 * B * H * T * Dk + B * H * T * Dv;  // Q, K, V
    n += 2.0 * B * H * T * Dv;                   // head_out, merged
    if (s.records)
        n += (s.dropout ? 5.0 : 4.0) * tt;  // scores, scores_scaled, scores_masked, weights (, weights_dropped)
    if (s.backward) {
        n += forward_weight_bytes(s) / 4.0;                             // dW_q .. db_o
        n += 2.0 * B * T * D + B * H * T * Dv;                          // dout, dx, d_out_heads
        n += 2.0 * B * H * T * Dk + B * H * T * Dv;                     // dQ, dK, dV
        if (s.backward_records) n += 2.0 * tt;                          // d_weights, d_scores
    }
    return n;
}

double forward_memory_bytes(const ForwardSizes& s) {
    const double B = static_cast<double>(s.batch), T = static_cast<double>(s.seq), D = static_cast<double>(s.d_model),
                 H = static_cast<double>(s.heads), Dk = static_cast<double>(s.d_k), Dv = static_cast<double>(s.d_v);
    const double tt = B * H * T * T;
    // The run: the weights, the activations of every step (projections, heads split
    // and merged, the output, and their copies in the record), and when recording
    // the (B, H, T, T) tensors: the four (five with dropout) kept in the record, one
    // more the reference forms on the way.
    double bytes = kProgramBytes + forward_weight_bytes(s);
    bytes += 4.0 * 8.0 * B * T * std::max({D, H * Dk, H * Dv});
    if (s.records) bytes += 4.0 * ((s.dropout ? 5.0 : 4.0) + 1.0) * tt;
    if (s.backward) {
        // the gradient of every activation and weight, and the upstream gradient
        bytes += forward_weight_bytes(s) + 4.0 * 9.0 * B * T * std::max({D, H * Dk, H * Dv});
        // the reference's backward recomputes the forward's five and forms three more
        if (s.backward_records) bytes += 4.0 * 8.0 * tt;
    }
    if (s.dump) {
        // Every tensor is copied into the dump (4 bytes a float), then written as
        // JSON text (at most kJsonBytesPerFloat a float, reserved once).
        const double n = forward_dump_floats(s);
        bytes += n * (4.0 + kJsonBytesPerFloat);
    }
    return bytes;
}

double model_attention_bytes(double weights_file, int64_t layers, int64_t heads, int64_t hidden, int64_t T, bool dump,
                             bool svg) {
    const double t = static_cast<double>(T), cells = static_cast<double>(layers * heads) * t * t;
    // The weights three times over, in part: the file as read, the model built from it, the
    // pre-transposed copies of its Linear weights (about half of the file) and, where the CPU
    // has AVX-512, the same copies packed for its GEMM (another half).
    double bytes =
        kProgramBytes + 3.0 * weights_file + 4.0 * 2.0 * cells + 4.0 * 64.0 * t * static_cast<double>(hidden);
    if (dump) bytes += cells * (4.0 + kJsonBytesPerFloat);
    if (svg) bytes += cells * kSvgBytesPerCell;
    return bytes;
}

double model_embed_bytes(double weights_file, int64_t heads, int64_t hidden, int64_t B, int64_t T) {
    const double b = static_cast<double>(B), t = static_cast<double>(T);
    return kProgramBytes + 3.0 * weights_file + 4.0 * b * static_cast<double>(heads) * t * t +
           4.0 * 16.0 * b * t * static_cast<double>(hidden);
}

double model_embed_texts_bytes(double text_bytes, int64_t N, int64_t hidden, bool json) {
    const double n = static_cast<double>(N), floats = n * static_cast<double>(hidden);
    // the text, its lines and their names ("--file F: line 12"), each a string of 32 bytes and more
    double bytes = 2.0 * text_bytes + n * (3.0 * 32.0 + 48.0);
    bytes += 4.0 * (text_bytes + 2.0 * n) + 24.0 * n;  // the ids: a vector each
    bytes += 4.0 * floats;                              // the embeddings
    // --json: each float a JSON value of 16 bytes (and its array's share) held in three trees at once (the
    // rows, the document, the copy the writer takes), then its text; measured at peak RSS (bert-tiny, 1 thread):
    // 177 MB for 20,000 sentences (estimate 190), 441 MB for 60,000 (estimate 540)
    if (json) bytes += floats * 120.0 + 2.0 * text_bytes + 512.0 * n;
    return bytes;
}

}  // namespace attn::cli
