// The backend table (attn/nn/backend.hpp): one row per implementation, and
// attention(), the entry that dispatches on it. Parity of every backend with
// the reference is in test_parity.cpp.
#include <doctest/doctest.h>

#include <set>
#include <string>

#include "attn/core/errors.hpp"
#include "attn/cpu/flash.hpp"
#include "attn/cuda/cuda.hpp"
#include "attn/nn/backend.hpp"

using namespace attn;

TEST_CASE("backend table: one row per Backend, in enum order, with unique names that round-trip") {
    const auto& rows = backends();
    REQUIRE(rows.size() == 7);
    std::set<std::string> names;
    for (size_t i = 0; i < rows.size(); ++i) {
        CHECK(static_cast<size_t>(rows[i].id) == i);
        CHECK(&backend_info(rows[i].id) == &rows[i]);
        CHECK(names.insert(rows[i].name).second);
        REQUIRE(find_backend(rows[i].name).has_value());
        CHECK(*find_backend(rows[i].name) == rows[i].id);
        CHECK(backend_names().find(rows[i].name) != std::string::npos);
        CHECK(static_cast<bool>(rows[i].run));
        CHECK(static_cast<bool>(rows[i].available));
        // the GPU rows are named after the CUDA module's kernels: one spelling of each name
        if (rows[i].device == Device::Cuda) CHECK(std::string(rows[i].name) == cuda_kernel_name(rows[i].cuda_kernel));
    }
    CHECK_FALSE(find_backend("cuda-fast").has_value());
    CHECK_FALSE(find_backend("").has_value());
    CHECK_FALSE(find_backend("Flash").has_value());
}

TEST_CASE("backend table: availability follows the build and the CPU, with a one-line reason") {
    CHECK(backend_available(Backend::Reference));
    CHECK(backend_available(Backend::Flash));
    CHECK(backend_available(Backend::FlashBf16) == flash_bf16_supported());
    for (const BackendInfo& row : backends()) {
        std::string why;
        const bool ok = row.available(&why);
        if (row.device == Device::Cuda) CHECK(ok == cuda_available());
        if (!ok) {
            CHECK(!why.empty());
            CHECK(why.find('\n') == std::string::npos);
        }
    }
}

TEST_CASE("attention(): refuses what a backend cannot do, with words that name it") {
    const Tensor q(Shape{1, 1, 3, 4}, 0.25f);
    AttentionRecord rec;
    for (const BackendInfo& row : backends()) {
        std::string why;
        if (!row.available(&why)) {
            try {
                (void)attention(row.id, q, q, q, Mask::none(), AttentionOptions{});
                FAIL("no error from an unavailable backend");
            } catch (const InputError& e) {
                CHECK(std::string(e.what()) == std::string(row.name) + ": " + why);
            }
            continue;
        }
        if (!row.records) {
            CHECK_THROWS_AS((void)attention(row.id, q, q, q, Mask::none(), AttentionOptions{}, &rec), InputError);
        } else {
            (void)attention(row.id, q, q, q, Mask::none(), AttentionOptions{}, &rec);
            CHECK(rec.weights.shape == Shape{1, 1, 3, 3});
        }
        // the same shape rule for every backend (C6: Q and K share Dk)
        const Tensor k_bad(Shape{1, 1, 3, 5}, 0.25f);
        CHECK_THROWS_AS((void)attention(row.id, q, k_bad, q, Mask::none(), AttentionOptions{}), ShapeError);
    }
}
