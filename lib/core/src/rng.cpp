// Seeded random numbers, identical on every platform (see attn/core/rng.hpp).
#include "attn/core/rng.hpp"

#include <cmath>

namespace attn {

uint64_t mix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

float counter_uniform(uint64_t seed, uint64_t index) {
    // Two rounds of mixing so neighbouring (seed, index) pairs decorrelate.
    const uint64_t h = mix64(mix64(seed) ^ (index * 0xd1b54a32d192ed03ULL));
    return static_cast<float>(h >> 40) * 0x1.0p-24f;
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

Rng::Rng(uint64_t seed, uint64_t stream) {
    // splitmix64 expansion of (seed, stream) into the 256-bit state.
    uint64_t z = mix64(seed) ^ mix64(stream * 0x632be59bd9b4e019ULL + 0x1234567ULL);
    for (auto& s : s_) {
        z += 0x9e3779b97f4a7c15ULL;
        s = mix64(z);
    }
}

uint64_t Rng::next_u64() {
    // xoshiro256**
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
}

float Rng::uniform() { return static_cast<float>(next_u64() >> 40) * 0x1.0p-24f; }
double Rng::uniform_double() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }
float Rng::uniform(float lo, float hi) { return lo + (hi - lo) * uniform(); }

double Rng::normal_double() {
    // Box-Muller in double; the second value of each pair is kept for the next call.
    if (has_spare_) {
        has_spare_ = false;
        return spare_;
    }
    double u1 = uniform_double();
    while (u1 <= 0.0) u1 = uniform_double();
    const double u2 = uniform_double();
    const double r = std::sqrt(-2.0 * std::log(u1));
    const double a = 6.283185307179586 * u2;
    spare_ = r * std::sin(a);
    has_spare_ = true;
    return r * std::cos(a);
}

float Rng::normal() { return static_cast<float>(normal_double()); }

}  // namespace attn
