// The GEMM kernels of lib/cpu (attn/cpu/gemm.hpp: float32 strided and strips, bf16 strips),
// each family this CPU runs, against a plain double-precision product element by element;
// the fused-multiply-add families against each other bit for bit (those this CPU runs: AVX-512
// and AVX2 on x86; NEON on AArch64, where the cross build runs this file under QEMU). The
// generic kernel (plain C++, every CPU) multiplies then adds: within the bound, not the bits. The callers' paths
// (training ops, encoder) are tested in test_nn_ops.cpp and test_bert.cpp.
//
// Tolerance: a float32 dot product of K terms summed with fused multiply-adds, in any order,
// is within gamma_K * sum|terms| of the exact value (Higham; gamma_K ~ K u, u = 2^-24 the unit
// roundoff); with a rounded product before each add, gamma_{K+1}. The check allows 2 (K + 1) u
// sum|terms| (+ 1e-30), the +1 for the initial value (bias or C) and the rounded products, the
// factor 2 for gamma_K > K u: a wrong term (an index off by one, a lane missed by a mask) is of
// the order of one term, far outside it.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "attn/core/rng.hpp"
#include "attn/cpu/gemm.hpp"
#include "attn/cpu/rows.hpp"
#include "test_util.hpp"

namespace {

std::vector<float> normals(uint64_t seed, int64_t n) {
    attn::Rng rng(seed, static_cast<uint64_t>(n));
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = rng.normal();
    return v;
}

// got (rows, cols, leading dimension ld) against ref within the bound above; mag holds
// sum|terms| per element (rows x cols).
int off_bound(const float* got, int64_t ld, const std::vector<double>& ref, const std::vector<double>& mag,
              int64_t rows, int64_t cols, int64_t K) {
    int bad = 0;
    for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j) {
            const size_t e = static_cast<size_t>(i * cols + j);
            const double err = std::fabs(static_cast<double>(got[i * ld + j]) - ref[e]);
            if (err > 2.0 * static_cast<double>(K + 1) * 0x1p-24 * mag[e] + 1e-30) ++bad;
        }
    return bad;
}

// The fused-multiply-add families first, then the generic one (every CPU runs it).
const attn::Isa kFamilies[] = {attn::Isa::avx512, attn::Isa::avx2, attn::Isa::neon, attn::Isa::generic};

}  // namespace

TEST_CASE("cpu gemm: the strided kernel of every family matches a double product element by element") {
    // A plain (sai = K, sak = 1) and read down its columns (sai = 1, sak = M); bias, 0 or
    // accumulate; column counts with a partial last vector of either width and narrow last
    // blocks (the taller tiles); row counts with tails of every tile; 64 x 64 x 64 and
    // 100 x 160 x 40 have more rows than one row block and several column blocks, so B is
    // copied into blocks first (AVX2 and AVX-512 alike)
    struct Shape {
        int64_t M, Nc, K;
    };
    std::vector<std::vector<float>> first;  // the first family's outputs, case by case
    int ran = 0;
    for (const attn::Isa isa : kFamilies) {
        const attn::gemm::StridedFn fn = attn::gemm::strided(isa);
        if (fn == nullptr) {
            CHECK(!attn::gemm::available(isa));
            attn::test::skip(std::string("strided GEMM ") + std::string(attn::isa_name(isa)) + ": not on this CPU");
            continue;
        }
        ++ran;
        size_t case_no = 0;
        for (const Shape s : {Shape{1, 5, 3}, Shape{13, 37, 70}, Shape{64, 64, 64}, Shape{33, 129, 17},
                              Shape{9, 16, 200}, Shape{100, 160, 40}})
            for (const bool transposed : {false, true})
                for (const int init : {0, 1, 2}) {  // 0: zero, 1: bias, 2: accumulate onto C
                    const std::string family(attn::isa_name(isa));
                CAPTURE(family);
                    CAPTURE(s.M);
                    CAPTURE(s.Nc);
                    CAPTURE(s.K);
                    CAPTURE(transposed);
                    CAPTURE(init);
                    const int64_t M = s.M, Nc = s.Nc, K = s.K, ldb = Nc + 3, ldc = Nc + 5;
                    const std::vector<float> A = normals(1, M * K), B = normals(2, K * ldb), bias = normals(3, Nc);
                    std::vector<float> C = normals(4, M * ldc);
                    const std::vector<float> C0 = C;
                    attn::gemm::StridedArgs g;
                    g.M = M;
                    g.Nc = Nc;
                    g.K = K;
                    g.A = A.data();
                    g.sai = transposed ? 1 : K;
                    g.sak = transposed ? M : 1;
                    g.B = B.data();
                    g.ldb = ldb;
                    g.C = C.data();
                    g.ldc = ldc;
                    g.bias = init == 1 ? bias.data() : nullptr;
                    g.accumulate = init == 2;
                    g.prefetch_b = transposed;
                    fn(g);
                    std::vector<double> ref(static_cast<size_t>(M * Nc)), mag(ref.size());
                    for (int64_t i = 0; i < M; ++i)
                        for (int64_t j = 0; j < Nc; ++j) {
                            double r = init == 1 ? bias[static_cast<size_t>(j)]
                                     : init == 2 ? C0[static_cast<size_t>(i * ldc + j)]
                                                 : 0.0;
                            double m = std::fabs(r);
                            for (int64_t k = 0; k < K; ++k) {
                                const double t = static_cast<double>(A[static_cast<size_t>(i * g.sai + k * g.sak)]) *
                                                 B[static_cast<size_t>(k * ldb + j)];
                                r += t;
                                m += std::fabs(t);
                            }
                            ref[static_cast<size_t>(i * Nc + j)] = r;
                            mag[static_cast<size_t>(i * Nc + j)] = m;
                        }
                    CHECK(off_bound(C.data(), ldc, ref, mag, M, Nc, K) == 0);
                    // the padding columns of C past Nc are not written
                    int touched = 0;
                    for (int64_t i = 0; i < M; ++i)
                        for (int64_t j = Nc; j < ldc; ++j)
                            touched += C[static_cast<size_t>(i * ldc + j)] != C0[static_cast<size_t>(i * ldc + j)];
                    CHECK(touched == 0);
                    // every FMA family sums each element in ascending k with one FMA per term
                    if (isa != attn::Isa::generic) {
                        if (ran == 1) first.push_back(C);
                        else CHECK(C == first[case_no]);
                    }
                    ++case_no;
                }
    }
    CHECK(ran >= 1);  // the generic kernel at least
}

TEST_CASE("cpu gemm: the packed-strip kernel of every family matches a double product element by element") {
    struct Shape {
        int64_t N, n_in, n_out;
    };
    std::vector<std::vector<float>> first;
    int ran = 0;
    for (const attn::Isa isa : kFamilies) {
        const attn::gemm::StripsFn fn = attn::gemm::strips(isa);
        if (fn == nullptr) {
            CHECK(!attn::gemm::available(isa));
            attn::test::skip(std::string("strip GEMM ") + std::string(attn::isa_name(isa)) + ": not on this CPU");
            continue;
        }
        ++ran;
        size_t case_no = 0;
        // row counts with tails of the 12-, 6- and 5-row tiles; n_out with partial strips and half and
        // quarter strips (NEON: 16 columns a tile; generic: 8); n_in 700 in passes of 192 terms
        // (192, 192, 192, then the last 124: the partial sums go through out between passes)
        for (const Shape s :
             {Shape{1, 7, 5}, Shape{13, 33, 40}, Shape{25, 64, 96}, Shape{50, 100, 81}, Shape{14, 700, 70}})
            for (const bool with_bias : {true, false}) {
                const std::string family(attn::isa_name(isa));
                CAPTURE(family);
                CAPTURE(s.N);
                CAPTURE(s.n_out);
                const int64_t N = s.N, n_in = s.n_in, n_out = s.n_out;
                const std::vector<float> x = normals(5, N * n_in), Wt = normals(6, n_in * n_out), b = normals(7, n_out);
                std::vector<float> packed(static_cast<size_t>(attn::gemm::strips_size(n_in, n_out)));
                attn::gemm::pack_strips(packed.data(), Wt.data(), n_in, n_out);
                std::vector<float> out(static_cast<size_t>(N * n_out), -7.0f);
                // in two calls over columns (c0 a multiple of 32) and rows, as the encoder splits the work
                const int64_t rs = N / 2, cs = n_out > 32 ? 32 : n_out;
                const float* bp = with_bias ? b.data() : nullptr;
                fn(out.data(), x.data(), packed.data(), bp, n_in, n_out, 0, rs, 0, cs);
                fn(out.data(), x.data(), packed.data(), bp, n_in, n_out, rs, N, 0, cs);
                if (cs < n_out) fn(out.data(), x.data(), packed.data(), bp, n_in, n_out, 0, N, cs, n_out);
                std::vector<double> ref(out.size()), mag(out.size());
                for (int64_t i = 0; i < N; ++i)
                    for (int64_t j = 0; j < n_out; ++j) {
                        double r = with_bias ? b[static_cast<size_t>(j)] : 0.0, m = std::fabs(r);
                        for (int64_t k = 0; k < n_in; ++k) {
                            const double t = static_cast<double>(x[static_cast<size_t>(i * n_in + k)]) *
                                             Wt[static_cast<size_t>(k * n_out + j)];
                            r += t;
                            m += std::fabs(t);
                        }
                        ref[static_cast<size_t>(i * n_out + j)] = r;
                        mag[static_cast<size_t>(i * n_out + j)] = m;
                    }
                CHECK(off_bound(out.data(), n_out, ref, mag, N, n_out, n_in) == 0);
                if (isa != attn::Isa::generic) {
                    if (ran == 1) first.push_back(out);
                    else CHECK(out == first[case_no]);
                }
                ++case_no;
            }
    }
    CHECK(ran >= 1);  // the generic kernel at least
}

TEST_CASE("cpu gemm: the families and ATTN_ISA") {
    // best() is the widest available SIMD family (generic where none is); amx has no float32
    // kernel, generic runs everywhere
    const attn::Isa b = attn::gemm::best();
    CHECK(attn::gemm::available(attn::Isa::generic));
    CHECK(attn::gemm::available(attn::Isa::amx) == false);
    CHECK((attn::gemm::strided(attn::Isa::amx) == nullptr));
    CHECK((attn::gemm::strided(attn::Isa::generic) != nullptr));
    CHECK((attn::gemm::strips(attn::Isa::generic) != nullptr));
    CHECK(attn::gemm::available(b));
    CHECK(attn::gemm::available(attn::Isa::avx512) == attn::cpu_has_avx512());
    CHECK(attn::gemm::available(attn::Isa::avx2) == attn::cpu_has_avx2());
    CHECK(attn::gemm::available(attn::Isa::neon) == attn::cpu_has_neon());
    // the cap reaches the encoder's choice: attn --version names the encoder GEMM under it
    if (attn::cpu_has_avx2()) {
        const attn::test::CliResult r = attn::test::run_attn("--version", "ATTN_ISA=avx2");
        REQUIRE(r.code == 0);
        CHECK(r.out.find("encoder GEMM avx2") != std::string::npos);
        CHECK(r.out.find("training GEMM avx2") != std::string::npos);
    }
}

TEST_CASE("cpu gemm: an AArch64 CPU runs the neon GEMMs and row kernels, so the tests of each family cover them") {
    if (!attn::cpu_has_neon()) {
        attn::test::skip("not an AArch64 CPU, or ATTN_ISA=generic: the neon GEMMs and row kernels are not tested");
        return;
    }
    CHECK(attn::gemm::best() == attn::Isa::neon);
    CHECK((attn::gemm::strided(attn::Isa::neon) != nullptr));
    CHECK((attn::gemm::strips(attn::Isa::neon) != nullptr));
    CHECK((attn::rows::row_kernels() == attn::rows::rows_neon_kernels()));
    CHECK((attn::rows::row_kernels() != nullptr));
}

namespace {
// float -> bfloat16 bits, nearest even (finite inputs), as vcvtneps2bf16 rounds
uint16_t bf16_bits(float x) {
    uint32_t u;
    std::memcpy(&u, &x, 4);
    u += 0x7fffu + ((u >> 16) & 1u);
    return static_cast<uint16_t>(u >> 16);
}
double bf16_value(uint16_t h) {
    const uint32_t u = static_cast<uint32_t>(h) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}
}  // namespace

TEST_CASE(
    "cpu gemm: the bf16 strip kernels (AVX-512 BF16, AMX, widened pairs on every family) match double sums of the "
    "rounded operands") {
    // The operands are bf16, so every product is exact in float32; only the float32 sums round:
    // the same 2 (K + 1) u sum|terms| bound as above, K = n_in.
    // n_in 600: 304 pairs a row, two passes of the strip (192 pairs, then 112)
    const int64_t N = 37, n_in = 600, n_out = 70, kp = (n_in + 31) / 32 * 16, strips = (n_out + 31) / 32;
    const std::vector<float> x = normals(8, N * n_in), Wt = normals(9, n_in * n_out), b = normals(10, n_out);
    std::vector<uint32_t> w(static_cast<size_t>(strips * kp * 32), 0u);
    for (int64_t k = 0; k < n_in; ++k)
        for (int64_t j = 0; j < n_out; ++j)
            w[static_cast<size_t>(((j / 32) * kp + k / 2) * 32 + j % 32)] |=
                static_cast<uint32_t>(bf16_bits(Wt[static_cast<size_t>(k * n_out + j)])) << (16 * (k % 2));
    std::vector<double> ref(static_cast<size_t>(N * n_out)), mag(ref.size());
    for (int64_t i = 0; i < N; ++i)
        for (int64_t j = 0; j < n_out; ++j) {
            double r = b[static_cast<size_t>(j)], m = std::fabs(r);
            for (int64_t k = 0; k < n_in; ++k) {
                const double t = bf16_value(bf16_bits(x[static_cast<size_t>(i * n_in + k)])) *
                                 bf16_value(bf16_bits(Wt[static_cast<size_t>(k * n_out + j)]));
                r += t;
                m += std::fabs(t);
            }
            ref[static_cast<size_t>(i * n_out + j)] = r;
            mag[static_cast<size_t>(i * n_out + j)] = m;
        }
    // x as bf16 pairs, rows padded to whole 32-row blocks (the AMX kernel reads them), and the
    // rounding checked against the scalar one
    const int64_t rows_padded = (N + 31) / 32 * 32;
    std::vector<uint16_t> expect(static_cast<size_t>(rows_padded * 2 * kp), 0);
    for (int64_t i = 0; i < N; ++i)
        for (int64_t k = 0; k < n_in; ++k)
            expect[static_cast<size_t>(i * 2 * kp + k)] = bf16_bits(x[static_cast<size_t>(i * n_in + k)]);
    int ran = 0;
    // the dot-product kernels, then the widened pairs of every float32 family this CPU runs
    const std::vector<std::string> kernels{"avx512-bf16", "amx", "widened avx512", "widened avx2", "widened neon",
                                           "widened generic"};
    for (const std::string& kernel : kernels) {
        CAPTURE(kernel);
        const bool dot = kernel.rfind("widened", 0) != 0;  // AMX CPUs convert with vcvtneps2bf16, as the encoder does
        attn::gemm::StripsPairsFn widened = nullptr;
        for (const attn::Isa isa : kFamilies)
            if (kernel == "widened " + std::string(attn::isa_name(isa))) widened = attn::gemm::strips_widened(isa);
        const bool here = kernel == "avx512-bf16" ? attn::gemm::bf16_dot_available()
                          : kernel == "amx"       ? attn::cpu_amx_bf16_usable() && attn::gemm::bf16_dot_available()
                                                  : widened != nullptr;
        if (!here) {
            attn::test::skip("bf16 strips " + kernel + ": not on this CPU");
            continue;
        }
        ++ran;
        std::vector<uint16_t> xb(expect.size(), 0);
        if (dot) attn::gemm::rows_to_bf16(xb.data(), x.data(), N, n_in, kp);
        else attn::gemm::rows_to_bf16_widened(xb.data(), x.data(), N, n_in, kp);
        CHECK(xb == expect);
        const auto* xp = reinterpret_cast<const uint32_t*>(xb.data());
        std::vector<float> out(static_cast<size_t>(N * n_out), -7.0f);
        if (kernel == "amx") attn::gemm::strips_amx(out.data(), xp, w.data(), b.data(), kp, n_out, N, 0, N, 0, n_out);
        else if (dot) attn::gemm::strips_bf16(out.data(), xp, w.data(), b.data(), kp, n_out, 0, N, 0, n_out);
        else widened(out.data(), xp, w.data(), b.data(), kp, n_out, 0, N, 0, n_out);
        CHECK(off_bound(out.data(), n_out, ref, mag, N, n_out, n_in) == 0);
    }
    CHECK(ran >= 1);  // the generic widened pairs at least
}
