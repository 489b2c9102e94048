// attn/cpu/amx_tiles.hpp: the 64-byte Intel AMX tile configuration that attn's AMX kernels
// load with _tile_loadconfig (the bf16 flash kernel in lib/cpu, the encoder's bf16 GEMM in
// lib/model). Plain data, no intrinsics: the kernels include <immintrin.h> under their own
// target pragmas. Layout from Intel's SDM (LDTILECFG): palette, start row, 14 reserved
// bytes, then the bytes per row of tiles 0..15, then their rows.
#pragma once

#include <cstdint>

namespace attn {

struct alignas(64) AmxTileConfig {
    uint8_t palette = 1;
    uint8_t start_row = 0;
    uint8_t reserved[14] = {};
    uint16_t colsb[16] = {};
    uint8_t rows[16] = {};
};
static_assert(sizeof(AmxTileConfig) == 64, "LDTILECFG reads 64 bytes");

// Palette 1 with tiles 0..7 each 16 rows x 64 bytes (16 float32 or 32 bf16 per row), the
// only shape attn's kernels use.
inline AmxTileConfig amx_tiles_16x64() {
    AmxTileConfig c;
    for (int t = 0; t < 8; ++t) {
        c.colsb[t] = 64;
        c.rows[t] = 16;
    }
    return c;
}

}  // namespace attn
