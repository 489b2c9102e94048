// Chinese text of lesson 4 (lessons/04_softmax.cpp). Keys: the lesson's English
// exactly; {0}, {1}: the English template's arguments in order.
#include "catalogue.hpp"

namespace attn::lessons {
namespace {
const RegisterCatalogue zh04{Lang::zh, 4, {
    {"Softmax of two scores", "两个分数的 softmax"},
    {"Softmax turns a row of scores into weights: exponentiate each, divide by the total. Every "
     "weight is positive and the row sums to 1. Only differences between scores matter, and they "
     "matter exponentially: a gap of 3 is already lopsided, a gap of 30 is a landslide.",
     "softmax 把一行分数变成权重：先对每个分数取指数，再除以总和。每个权重都是正数，整行之和为 1。"
     "起作用的只有分数之间的差，而且是按指数起作用：差 3 已经明显一边倒，差 30 则是压倒性的。"},
    {"softmax", "softmax"},
    {"closed form 1/(1+e^gap)", "闭式解 1/(1+e^差)"},
    {"one row: [0, {:g}]", "一行：[0, {0:g}]"},
    {"softmax over the last dimension", "在最后一维上做 softmax"},
    {"softmax([0, {:g}]) = [{:.3g}, {:.4f}] matches 1/(1+e^{:g}) = {:.3g}",
     "softmax([0, {0:g}]) = [{1:.3g}, {2:.4f}]，与 1/(1+e^{3:g}) = {4:.3g} 一致"},
    {"with a gap of 30 the smaller weight is {}: the row is one-hot for every practical purpose",
     "差为 30 时较小的权重是 {0}：就实际用途而言，这一行就是 one-hot"},
    {"The gradient dies as the row saturates", "行一饱和，梯度就消失"},
    {"Training moves weights by nudging scores. How much a weight moves per unit of score is the "
     "softmax Jacobian J = diag(p) − p pᵀ. For two scores its entries are ±p₀p₁, largest at a tie "
     "(½·½) and vanishing as either weight nears 1. We measure its size (Frobenius norm) along a row that "
     "grows sharper: scores [0, c] for growing c, then 8 random scores multiplied by s.",
     "训练通过轻推分数来改变权重。分数每变化一个单位、权重变化多少，由 softmax 的雅可比矩阵 "
     "J = diag(p) − p pᵀ 给出。两个分数时它的元素是 ±p₀p₁，在两者相等时最大（½·½），"
     "任一权重接近 1 时趋于零。我们沿着一行越来越尖锐的分数测量它的大小（Frobenius 范数）："
     "先是 c 不断增大的 [0, c]，再是乘以 s 的 8 个随机分数。"},
    {"8 random scores", "8 个随机分数"},
    {"8 random × {:g}", "8 个随机分数 × {0:g}"},
    {"‖J‖_F from the formula equals the norm of the explicit Jacobian at [0, 3] ({} vs {})",
     "在 [0, 3] 处，公式给出的 ‖J‖_F 等于显式雅可比矩阵的范数（{0} 对比 {1}）"},
    {"two scores: the Jacobian shrinks at every step as the gap grows ({} at a tie, {} at [0, 30])",
     "两个分数：差距每增大一步，雅可比矩阵都随之缩小（相等时 {0}，[0, 30] 时 {1}）"},
    {"on every row above ‖J‖_F ≤ 4·(1 − max weight) (closest: {:.2f} of the bound): a nearly "
     "one-hot row passes almost nothing, for two keys or eight",
     "上面每一行都满足 ‖J‖_F ≤ 4·(1 − 最大权重)（最接近时达到上界的 {0:.2f}）：无论两个键还是八个键，"
     "接近 one-hot 的行几乎传不回任何梯度"},
    {"at [0, 30] a score change moves the weights {} times less than at a tie",
     "在 [0, 30] 处，同样的分数变化使权重移动的幅度比相等时小 {0} 倍"},
    {"That is the mechanism behind the \"locking\" the source warns about: through the softmax, a "
     "nearly one-hot row passes almost no gradient to its scores, so the signal that would move weight to "
     "a better key is tiny. Tiny is not zero, though, and the row is not frozen for good: the value path "
     "(weights·V) still carries gradient to V and the layers below, and optimisers such as Adam divide "
     "each update by the gradient's recent size, which rescales small gradients back up. How much "
     "saturation actually slows training is an empirical question (`attn experiment scale` "
     "measures it); what this lesson shows is only that the softmax's own gradient collapses. "
     "Lesson 5 shows how large scores get without the 1/√Dk scaling.",
     "这就是原文所警告的“锁死”背后的机制：经过 softmax，接近 one-hot 的行几乎不向它的分数回传梯度，"
     "因此能把权重移到更好的键上的信号非常微弱。不过微弱不等于零，这一行也不会永远冻结："
     "值的通路（权重·V）仍然把梯度传给 V 和下面的层，而 Adam 这类优化器会把每次更新除以梯度近来的大小，"
     "把小梯度重新放大。饱和到底让训练慢了多少，是一个经验问题（`attn experiment scale` 会测量它）；"
     "本课只说明 softmax 自身的梯度会塌缩。第 5 课展示不做 1/√Dk 缩放时分数会有多大。"},
    {"the gradient through a saturated row does collapse (above), but whether the row "
     "\"cannot recover\" depends on the optimiser and on how far it is saturated. The first "
     "step on the scores of [0, 10], against the same step at a tie: plain SGD {}, Adam "
     "(eps = 1e-8) {}, full size. At [0, 30] both shrink (SGD {}, Adam {}): the gradient is "
     "below Adam's eps. `attn experiment lock-in` measures recovery in training.",
     "经过饱和行的梯度确实会塌缩（见上），但这一行是否“无法恢复”取决于优化器，也取决于它饱和到什么程度。"
     "在 [0, 10] 这一行的分数上走第一步，与平局时的同一步相比：普通 SGD 为 {0}，Adam（ε = 1e-8）为 {1}，"
     "步长几乎不变。到了 [0, 30] 两者都缩小（SGD {2}，Adam {3}）：梯度已低于 Adam 的 ε。"
     "`attn experiment lock-in` 在训练中测量能否恢复。"},
}};
}  // namespace
}  // namespace attn::lessons
