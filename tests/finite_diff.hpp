// tests/finite_diff.hpp: the central difference every gradient test checks an analytic
// gradient against, written once.
//
//   d loss / d x  ~  (loss(x + h) - loss(x - h)) / 2h
//
// In double with h = kFdStep = 1e-5 the truncation error is ~h^2 |f'''| ~ 1e-10 and the
// rounding error ~1e-16 |loss| / h ~ 1e-11, so a bound of 1e-7 + 1e-6 |g| (or 1e-5 |g|) leaves
// two orders of margin and still fails on any wrong term. A test that needs another step
// (a kink nearby, a quantity of size 1e-14) passes its own h and says why.
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

namespace attn::test {

inline constexpr double kFdStep = 1e-5;

// loss() with x moved to x + h, then x - h; x is restored before returning.
template <class Loss>
double central_difference(double& x, Loss&& loss, double h = kFdStep) {
    const double keep = x;
    x = keep + h;
    const double up = loss();
    x = keep - h;
    const double down = loss();
    x = keep;
    return (up - down) / (2 * h);
}

// The elements of x at `at` (every element when `at` is empty): each one's central
// difference against grad, with the bound abs + rel |grad|.
struct FdReport {
    int bad = 0;        // elements outside the bound
    double worst = 0;   // largest |fd - grad|
    int checked = 0;
};
template <class Loss>
FdReport check_central_differences(std::vector<double>& x, const std::vector<double>& grad, Loss&& loss, double rel,
                                   const std::vector<size_t>& at = {}, double abs = 1e-7) {
    FdReport r;
    const auto one = [&](size_t i) {
        const double fd = central_difference(x[i], loss), err = std::fabs(fd - grad[i]);
        if (err > abs + rel * std::fabs(grad[i])) ++r.bad;
        r.worst = std::max(r.worst, err);
        ++r.checked;
    };
    if (at.empty())
        for (size_t i = 0; i < x.size(); ++i) one(i);
    else
        for (size_t i : at) one(i);
    return r;
}

}  // namespace attn::test
