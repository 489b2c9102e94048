// Which row kernels the fast training ops use (attn/cpu/rows.hpp): the widest table this CPU runs under ATTN_ISA.
#include "attn/cpu/rows.hpp"

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

}  // namespace attn::rows
