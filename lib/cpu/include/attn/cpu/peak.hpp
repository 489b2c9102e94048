// attn/cpu/peak.hpp: the kernels of the machine's float32 FMA peak (lib/bench's
// measure_fma_peak times them). Internal to attn.
//
//   fma(iters)    a register-only loop: 12 independent accumulators (FMA latency 4 cycles x 2
//                 FMA ports = 8 in flight saturate the units; 12 leave margin and fit 16
//                 registers), iters x 12 vector FMAs of `lanes` floats
//   tile(iters)   the kernels' inner loop alone: iters tiles of kPeakTileSteps steps of
//                 kPeakTileRows rows x tile_nv vectors (flash's score and P.V tiles, the GEMMs'
//                 register tiles), fed from panels that stay in L1; 2 x steps x rows x tile_nv x
//                 lanes FLOPs a tile
// Each returns a value so that the work is kept. One variant per vector width (AVX-512, AVX2,
// scalar), picked at run time as the flash kernels are.
#pragma once

#include <cstdint>

namespace attn {

inline constexpr int kPeakTileSteps = 64, kPeakTileRows = 6;

struct PeakKernels {
    const char* isa = "scalar";              // "avx512", "avx2", "scalar"
    const char* tile_shape = "6 x 4 scalar";  // "6 x 4 zmm", "6 x 2 ymm"
    int lanes = 1, tile_nv = 4;
    float (*fma)(int64_t iters) = nullptr;
    float (*tile)(int64_t iters) = nullptr;
};
// The widest this CPU runs (cpu_has_avx512, cpu_has_avx2 of attn/cpu/features.hpp), else scalar.
PeakKernels peak_kernels();

}  // namespace attn
