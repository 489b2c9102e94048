// attn/core/rng.hpp: seeded random numbers that are bit-identical everywhere.
//
// std::normal_distribution differs between standard libraries, so attn
// draws its own: xoshiro256** seeded through splitmix64, uniforms from the top
// 24 (float) or 53 (double) bits, normals by Box-Muller. A stream id makes
// independent generators from one seed, so parallel work can give each fixed
// chunk its own stream and get the same numbers at any thread count.
#pragma once

#include <cstdint>

namespace attn {

// splitmix64's finaliser: a strong 64-bit mix.
uint64_t mix64(uint64_t x);

// A stateless uniform in [0, 1) from (seed, index): used where the value must
// not depend on the order of evaluation (dropout masks, parallel loops).
float counter_uniform(uint64_t seed, uint64_t index);

class Rng {
public:
    explicit Rng(uint64_t seed, uint64_t stream = 0);
    uint64_t next_u64();
    float uniform();            // [0, 1), 24 random bits
    double uniform_double();    // [0, 1), 53 random bits
    float uniform(float lo, float hi);
    float normal();             // mean 0, std 1
    double normal_double();
    float normal(float mean, float std) { return mean + std * normal(); }

private:
    uint64_t s_[4];
    bool has_spare_ = false;
    double spare_ = 0.0;
};

}  // namespace attn
