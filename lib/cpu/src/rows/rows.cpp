// Which row kernels the fast training ops use (attn/cpu/rows.hpp): the widest table this CPU runs under ATTN_ISA;
// and the transpose that takes the table's or a plain loop.
#include "attn/cpu/rows.hpp"

#include <type_traits>

#include "attn/cpu/features.hpp"

namespace attn::rows {

const RowKernels* row_kernels() {
    static const RowKernels* chosen = []() -> const RowKernels* {
        if (cpu_has_avx512() && rows_avx512_kernels() != nullptr) return rows_avx512_kernels();
        if (cpu_has_avx2() && rows_avx2_kernels() != nullptr) return rows_avx2_kernels();
        if (cpu_has_neon() && rows_neon_kernels() != nullptr) return rows_neon_kernels();
        return nullptr;
    }();
    return chosen;
}

template <class S>
void transpose(S* dst, const S* src, int64_t rows, int64_t cols, int64_t lds) {
    if constexpr (std::is_same_v<S, float>)
        if (const auto* k = row_kernels(); k != nullptr && 16 * lds < (int64_t{1} << 28))
            return k->transpose(dst, rows, src, rows, cols, lds, false);
    for (int64_t r = 0; r < rows; ++r) {
        __builtin_prefetch(src + (r + 8) * lds);
        for (int64_t c = 0; c < cols; ++c) dst[c * rows + r] = src[r * lds + c];
    }
}

template void transpose<float>(float*, const float*, int64_t, int64_t, int64_t);
template void transpose<double>(double*, const double*, int64_t, int64_t, int64_t);

}  // namespace attn::rows
