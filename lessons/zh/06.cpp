// Chinese text of lesson 6 (lessons/06_scale_alternatives.cpp). Keys: the
// lesson's English exactly; {0}, {1}: the English template's arguments in order.
#include "catalogue.hpp"

namespace attn::lessons {
namespace {
const RegisterCatalogue zh06{Lang::zh, 6, {
    {"Divide by a fixed constant instead", "改为除以一个固定常数"},
    {"Lesson 5 divides scores by √Dk because their spread grows like √Dk. A simpler idea is to "
     "divide by one constant, say {:g}, whatever Dk is. The spread of the scaled scores then still "
     "grows like √Dk, just {:g} times smaller: the constant is right for exactly one Dk ({:g}² = "
     "{:g}) and wrong for the rest. Below, 128 random queries against 128 random keys (entries "
     "N(0, 1)) for each Dk.",
     "第 5 课把分数除以 √Dk，因为分数的离散程度按 √Dk 增长。更简单的想法是不管 Dk 多大，都除以同一个常数，"
     "比如 {0:g}。这样缩放后分数的离散程度仍按 √Dk 增长，只是小了 {1:g} 倍：这个常数恰好只对一个 Dk"
     "（{2:g}² = {3:g}）合适，对其余的都不对。下面对每个 Dk，用 128 个随机查询对 128 个随机键"
     "（元素服从 N(0, 1)）。"},
    {"128 random queries; keys alike", "128 个随机查询；键也一样"},
    {"128 × 128 per Dk", "每个 Dk 一个 128 × 128"},
    {"std ÷√Dk", "标准差 ÷√Dk"},
    {"std ÷10", "标准差 ÷10"},
    {"entropy ÷√Dk", "熵 ÷√Dk"},
    {"entropy ÷10", "熵 ÷10"},
    {"max weight ÷√Dk", "最大权重 ÷√Dk"},
    {"max weight ÷10", "最大权重 ÷10"},
    {"Entropy is normalised: 1 means uniform over the 128 keys, 0 means one-hot.",
     "熵已归一化：1 表示在 128 个键上均匀分布，0 表示 one-hot。"},
    {"÷√Dk keeps the spread near 1 at every Dk ({} .. {})",
     "÷√Dk 让离散程度在每个 Dk 下都保持在 1 附近（{0} .. {1}）"},
    {"÷10 lets the spread grow {}× from Dk = {} to {} (√({}/{}) = {})",
     "÷10 时，从 Dk = {1} 到 {2}，离散程度增长到 {0} 倍（√({3}/{4}) = {5}）"},
    {"the source says a fixed constant \"trained slightly worse\"; that is a "
     "training result (`attn experiment scale` trains it). What the numbers show is "
     "why it could: with ÷10 the score spread is {} at Dk = {} (softmax nearly "
     "uniform) and {} at Dk = {} (sharper), so the constant suits only one width, "
     "while ÷√Dk gives ~1 at all of them.",
     "原文说固定常数“训练效果略差”；这是训练的结果（`attn experiment scale` 会训练它）。"
     "数字能说明的是为什么可能如此：用 ÷10 时，分数的离散程度在 Dk = {1} 时为 {0}（softmax 几乎均匀），"
     "在 Dk = {3} 时为 {2}（更尖锐），所以这个常数只适合一种宽度，而 ÷√Dk 在所有宽度下都约为 1。"},
    {"Cosine similarity: bounded scores", "余弦相似度：有界的分数"},
    {"Another fix is to normalise q and k to length 1 before the dot product: the score becomes "
     "cos θ, always in [−1, 1], whatever Dk and whatever the vectors' sizes. (This is also what "
     "\"L2-normalised Q and K\" means in stability recipes.) Bounded has a price: a softmax over "
     "scores in [−1, 1] can never be sharp, so such models divide by a temperature τ, a learned or "
     "tuned constant.",
     "另一种修正是在做点积之前把 q 和 k 归一化到长度 1：分数于是变成 cos θ，不论 Dk 多大、向量本身多长，"
     "总在 [−1, 1] 之内。（数值稳定的处方里说的“L2 归一化的 Q 和 K”也是这个意思。）有界是有代价的："
     "对 [−1, 1] 内的分数做 softmax 永远不可能尖锐，所以这类模型还要除以一个温度 τ，"
     "它是学出来或调出来的常数。"},
    {"max |score| cos", "最大 |分数| cos"},
    {"entropy cos (τ = 1)", "熵 cos（τ = 1）"},
    {"entropy cos/0.1 (τ = 0.1)", "熵 cos/0.1（τ = 0.1）"},
    {"cosine scores stay within [−1, 1] at every Dk (max |score| = {:.6f})",
     "在每个 Dk 下余弦分数都不超出 [−1, 1]（最大 |分数| = {0:.6f}）"},
    {"with τ = 1 every row is nearly uniform (normalised entropy ≥ {})",
     "τ = 1 时每一行都几乎均匀（归一化熵 ≥ {0}）"},
    {"What cosine throws away", "余弦相似度丢掉了什么"},
    {"Take one query and two keys that point the same way (roughly towards the query), one of length "
     "1 and one of length 4. For "
     "the dot product the long key is the stronger match. For cosine they are the same key. If a "
     "model uses vector length to mark how strong or salient a token is, cosine attention cannot "
     "see it.",
     "取一个查询和两个方向相同（大致指向该查询）的键，一个长度为 1，一个长度为 4。对点积来说，"
     "长的键匹配得更强；对余弦相似度来说，它们是同一个键。如果模型用向量长度来标记一个 token "
     "有多强、多显著，余弦注意力就看不到这一点。"},
    {"k and 4·k", "k 和 4·k"},
    {"score value", "分数值"},
    {"cos(q, k)", "cos(q, k)"},
    {"cosine gives both keys the same weight (diff {})", "余弦相似度给两个键相同的权重（差 {0}）"},
    {"the dot product tells them apart (weights {:.3f} vs {:.3f})",
     "点积能把它们区分开（权重 {0:.3f} 对 {1:.3f}）"},
    {"unscaled scores at d_k = 1024: log(softmax) of the lowest weight is -inf in {} rows, "
     "log_softmax is finite in all ({} not finite); log_softmax rows sum to {:.0f}, so it "
     "stabilises the loss but cannot stand in for the weights (attn experiment stability)",
     "d_k = 1024 时的不缩放分数：最小权重的 log(softmax) 在 {0} 行中为 -inf，而 log_softmax 全部有限"
     "（非有限：{1}）；log_softmax 的行和为 {2:.0f}，所以它能稳定损失，却不能代替权重"
     "（attn experiment stability）"},
    {"loss scaling for mixed precision concerns training in float16, which attn does not do.",
     "混合精度下的损失缩放针对的是 float16 训练，而 attn 不做这种训练。"},
    {"Stabilise with L2-normalised Q and K, log_softmax, and loss scaling in mixed precision",
     "用 L2 归一化的 Q 和 K、log_softmax 以及混合精度下的损失缩放来保证数值稳定"},
    {"names log_softmax among the fixes, and the second article has it replace softmax. "
     "It cannot replace the attention weights: for the dot-product row above, softmax "
     "gives {} and log_softmax gives {}, negative numbers that sum to {}, not 1, so "
     "they cannot weight the values. log_softmax is the stable way to compute a "
     "cross-entropy loss (log of the output probabilities), not attention.",
     "这一条把 log_softmax 列为修正手段之一，第二篇文章更让它取代 softmax。但它取代不了注意力权重："
     "对上面点积的那一行，softmax 给出 {0}，log_softmax 给出 {1}，这些负数之和为 {2} 而不是 1，"
     "不能用来给值加权。log_softmax 是计算交叉熵损失（输出概率的对数）的稳定方法，不是用来算注意力的。"},
    {"a fixed 1/10 instead of 1/sqrt(d_k) trains slightly worse", "用固定的 1/10 代替 1/sqrt(d_k)，训练效果略差"},
    {"measuring: attn experiment stability at its quick size", "测量中：attn experiment stability（快速规模）"},
    {"The source names no Dk for this comparison. Dk = {} is the width of its multi-head "
     "example (512 = 8 × 64) and of most models: there √Dk = {:g}, so ÷10 gives scores {:g} times "
     "the size ÷√Dk gives, a small change. At Dk = {} the factor is {:g}, a large one. The verdict "
     "below trains both widths and is taken at Dk = {}, the width of the source's heads.",
     "原文做这个比较时没有说 Dk 是多少。Dk = {0} 是它多头示例（512 = 8 × 64）的宽度，也是多数模型的宽度："
     "此时 √Dk = {1:g}，所以 ÷10 得到的分数是 ÷√Dk 的 {2:g} 倍，变化很小。在 Dk = {3} 时这个倍数是 {4:g}，"
     "变化很大。下面的结论在两种宽度上都做了训练，并以原文各头的宽度 Dk = {5} 为准。"},
    // attn experiment scale's readable C20 verdict (lib/experiments/src/exp_scale.cpp)
    {"at d_k {}, where 1/10 makes the scores {} times what 1/sqrt(d_k) makes them, 1/10 reached 95% in {} "
     "steps against {} (steps are read every {}): {}",
     "在 d_k = {0} 时，1/10 得到的分数是 1/√d_k 的 {1} 倍；1/10 用 {2} 步达到 95%，1/√d_k 用 {3} 步"
     "（每 {4} 步读一次）：{5}"},
    {"slower, as the source says", "更慢，与原文一致"},
    {"faster", "更快"},
    {"no difference at this resolution", "在这个分辨率下没有差别"},
    {"long sequences make the dot product overflow", "序列很长时点积会溢出"},
    {"is wrong as the second article's numerics section (§5.2) puts it: it ties "
     "数值溢出, overflow, to the sequence length. A score q·k sums Dk products, however long the "
     "sequence: a longer row holds more scores, not larger ones (unscaled at Dk = {}, the "
     "largest |q·k| of a row is {:.1f} at T = 64 and {:.1f} at T = 4096, only the largest "
     "of more draws), and float32's exp overflows above {:.1f} only without the row "
     "maximum subtracted, which every softmax does first (all weights finite at T = 4096: "
     "{}).",
     "照第二篇文章数值稳定性一节（§5.2）的说法是错的：它把数值溢出归因于序列长度。无论序列多长，分数 q·k 都是 "
     "Dk 个乘积之和：更长的行只是分数更多，而不是分数更大（不缩放、Dk = {0} 时，一行中最大的 |q·k| 在 T = 64 时为 "
     "{1:.1f}，在 T = 4096 时为 {2:.1f}，只是从更多次抽样中取最大值而已）；float32 的 exp 只有在不先减去行最大值时，"
     "输入超过 {3:.1f} 才会溢出，而每个 softmax 都会先减去它（T = 4096 时所有权重都是有限值：{4}）。"},
}};
}  // namespace
}  // namespace attn::lessons
