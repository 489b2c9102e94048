// Chinese text of lesson 5 (lessons/05_why_sqrt_dk.cpp). Keys: the lesson's
// English exactly; {0}, {1}: the English template's arguments in order.
#include "catalogue.hpp"

namespace attn::lessons {
namespace {
const RegisterCatalogue zh05{Lang::zh, 5, {
    {"The spread of q·k grows like √Dk", "q·k 的离散程度按 √Dk 增长"},
    {"A score is q·k = q₁k₁ + … + q_Dk k_Dk. Suppose the entries are independent with mean 0 "
     "and variance 1 (roughly what a well-initialised layer produces). Each product qᵢkᵢ then has "
     "mean 0 and variance 1, and a sum of Dk independent terms has variance Dk. So the typical size "
     "of a score, its standard deviation, is √Dk: {:g} for Dk = 1, {:g} for Dk = 64, about {:.1f} for "
     "Dk = 512. Dividing by √Dk brings it back to 1, whatever Dk.",
     "分数是 q·k = q₁k₁ + … + q_Dk k_Dk。假设各元素相互独立，均值为 0、方差为 1（初始化良好的层大致如此）。"
     "于是每个乘积 qᵢkᵢ 的均值为 0、方差为 1，而 Dk 个独立项之和的方差为 Dk。所以分数的典型大小，即它的标准差，"
     "是 √Dk：Dk = 1 时为 {0:g}，Dk = 64 时为 {1:g}，Dk = 512 时约为 {2:.1f}。"
     "除以 √Dk 之后，不论 Dk 多大，标准差都回到 1。"},
    {"What unscaled scores do to softmax", "不缩放的分数对 softmax 做了什么"},
    {"A spread of {:g} puts the source's range of ±{:g} at three standard deviations: only {:.2f}% "
     "of scores fall outside it ({:.2f}% above +{:g}). What matters to softmax is how far a row's "
     "largest score stands above the others, and softmax exponentiates: exp({:g}) / exp(0) is",
     "标准差为 {0:g} 时，原文给出的范围 ±{1:g} 恰好是三个标准差：只有 {2:.2f}% 的分数落在它之外"
     "（高于 +{4:g} 的占 {3:.2f}%）。对 softmax 要紧的，是一行中最大的分数比其余分数高出多少；而 softmax "
     "要取指数：exp({5:g}) / exp(0) 为"},
    {"top score", "最大分数"},
    {"top score: each row's largest score, averaged over rows. max weight: each row's largest weight, "
     "averaged over rows. entropy: the rows' mean entropy divided by log T, so 1 = uniform and 0 = one-hot.",
     "最大分数：每行最大的分数，对各行取平均。最大权重：每行最大的权重，对各行取平均。熵：各行的平均熵除以 log T，"
     "1 = 均匀，0 = one-hot。"},
    {"at Dk = 64, the claim's setting, unscaled rows are sharp (largest weight {:.0f}% on "
     "average) but most are not one-hot: {:.1f}% of rows put more than 0.99 on one key, "
     "against {:.1f}% at Dk = 512. A row's top score is about {:.0f}, not 24.",
     "在论断所说的 Dk = 64 下，不缩放的行很尖锐（最大权重平均 {0:.0f}%），但多数行并非 one-hot："
     "只有 {1:.1f}% 的行在某一个键上放了超过 0.99 的权重，而 Dk = 512 时为 {2:.1f}%。一行的最大分数约为 {3:.0f}，"
     "而不是 24。"},
    {"exp({:g}) = {:.2e}: one such score outweighs {:.1e} scores of 0 put together",
     "exp({0:g}) = {1:.2e}：一个这样的分数，抵得上 {2:.1e} 个分数为 0 的位置加在一起"},
    {"Here is one head with T = 64 random queries and keys at Dk = 64, scores used as they are and "
     "divided by √Dk:",
     "下面是一个头：T = 64 个随机查询和键，Dk = 64，分数分别原样使用和除以 √Dk："},
    {"Dk = 64, T = 64", "Dk = 64, T = 64"},
    {"score std", "分数标准差"},
    {"entropy", "熵"},
    {"rows ‖J‖_F < 0.01", "‖J‖_F < 0.01 的行"},
    {"q·k (unscaled)", "q·k（不缩放）"},
    {"unscaled, a row puts {:.0f}% of its weight on one key on average; scaled, {:.0f}%",
     "不缩放时，一行平均把 {0:.0f}% 的权重放在一个键上；缩放后为 {1:.0f}%"},
    {"{:.1f}% of unscaled rows are saturated so far that softmax's Jacobian is below 0.01 "
     "(a two-way tie has 0.5); {:.1f}% of scaled rows",
     "不缩放时有 {0:.1f}% 的行饱和到 softmax 的雅可比矩阵低于 0.01（两者相等时为 0.5）；缩放后为 {1:.1f}%"},
    {"The heatmaps show the first {} queries against the {} keys that matter to them: the key "
     "each row weights most ({} distinct keys), then the keys with the most weight. These "
     "{} of the 64 columns hold {:.0f}% of the unscaled rows' weight.",
     "热力图展示前 {0} 个查询对 {1} 个与它们相关的键：先是每行权重最大的键（共 {2} 个不同的键），"
     "再是总权重最多的键。这 {3} 列（共 64 列）装着不缩放时这些行 {4:.0f}% 的权重。"},
    {"unscaled, first {} queries, their top keys", "不缩放，前 {0} 个查询及其最重要的键"},
    {"divided by √Dk, same queries and keys", "除以 √Dk，相同的查询和键"},
    {"\"Weights all near 0 or 1\"", "“权重全都接近 0 或 1”"},
    {"The source reports that a model trained without the scaling barely learned and that its weights "
     "were all close to 0 or 1. attn cannot repeat the training here, but it can measure the second half at "
     "initialisation. Counting single weights below 0.01 or above 0.99 would mislead: in a row of 64 "
     "soft weights most are below 0.01 anyway (a uniform row has 1/64 ≈ 0.016 each), so that count is "
     "high even for healthy rows. The measure that means \"0 or 1\" is the share of one-hot rows, whose "
     "largest weight is above 0.99 (all others then share less than 0.01):",
     "原文说，不加缩放训练的模型几乎学不动，权重全都接近 0 或 1。attn 无法在这里重复那次训练，"
     "但可以在初始化时测量后半句。逐个数低于 0.01 或高于 0.99 的权重会产生误导：一行 64 个平滑的权重里，"
     "本来大多数就低于 0.01（均匀的一行每个都是 1/64 ≈ 0.016），所以即使是健康的行，这个计数也很高。"
     "真正对应“0 或 1”的度量是 one-hot 行的比例，即最大权重高于 0.99 的行（其余权重合计不到 0.01）："},
    {"one-hot rows, unscaled", "one-hot 行，不缩放"},
    {"one-hot rows, ÷√Dk", "one-hot 行，÷√Dk"},
    {"max weight, unscaled", "最大权重，不缩放"},
    {"at Dk = 512, {:.1f}% of unscaled rows are one-hot (Dk = 16: {:.1f}%); with the scaling, "
     "{:.1f}%",
     "Dk = 512 时，不缩放的行有 {0:.1f}% 是 one-hot（Dk = 16 时：{1:.1f}%）；加上缩放后为 {2:.1f}%"},
    {"\"almost untrainable\" is a training outcome (`attn experiment scale` trains it); "
     "the saturation above (and lesson 4's vanishing Jacobian) is the mechanism the source "
     "points to.",
     "“几乎无法训练”是训练的结果（`attn experiment scale` 会实际训练）；上面的饱和（以及第 4 课中消失的雅可比矩阵）"
     "是原文所指的机制。"},
    {"without the scale the model is almost untrainable, weights all ~0 or ~1",
     "不缩放时模型几乎无法训练，权重全都接近 0 或 1"},
    {"Is there a floor at Dk = 64?", "Dk = 64 是下限吗？"},
    {"The source also advises that for long sequences Dk may be lowered to save compute, \"but not "
     "below 64\". What changes with Dk once scores are scaled? Below: one head, T = 256, for Dk from "
     "16 to 128. The softmax statistics are the same at every width; what does change is the cost "
     "and the rank of the score matrix Q·Kᵀ, which can never exceed Dk.",
     "原文还建议，序列很长时可以降低 Dk 以节省计算，“但不要低于 64”。分数缩放之后，随 Dk 变化的是什么？"
     "下面是一个头，T = 256，Dk 从 16 到 128。softmax 的统计量在每个宽度下都相同；"
     "真正变化的是计算量，以及分数矩阵 Q·Kᵀ 的秩，它永远不会超过 Dk。"},
    {"rank of Q·Kᵀ", "Q·Kᵀ 的秩"},
    {"rank of weights", "权重的秩"},
    {"QKᵀ FLOPs", "QKᵀ FLOPs"},
    {"the {} × {} score matrix has rank Dk: {}, {}, {}, {}", "{0} × {1} 的分数矩阵的秩等于 Dk：{2}、{3}、{4}、{5}"},
    {"Ranks count singular values above 1e-3 of the largest. The weights are another matter: "
     "softmax exponentiates each score separately, and an entrywise exp of a rank-Dk matrix is "
     "in general of full rank, so softmax(Q·Kᵀ/√Dk) has rank {} at Dk = 16 (of {}) even though "
     "Q·Kᵀ has rank 16. The rank limit is on the scores a head can express, not on its weights.",
     "这里的秩统计的是大于最大奇异值 1e-3 倍的奇异值个数。权重则是另一回事：softmax 对每个分数分别取指数，"
     "而对秩为 Dk 的矩阵逐元素取 exp，结果一般是满秩的，所以尽管 Q·Kᵀ 的秩是 16，"
     "softmax(Q·Kᵀ/√Dk) 在 Dk = 16 时的秩却是 {0}（满秩为 {1}）。秩的限制作用在一个头能表达的分数上，"
     "而不是它的权重上。"},
    {"at Dk = 16 the weights have rank {}, above the scores' {}: exp breaks the low rank",
     "Dk = 16 时权重的秩为 {0}，高于分数的 {1}：exp 打破了低秩"},
    {"the direction holds: a smaller Dk lowers the rank of the scores (above) and with "
     "it what a head can express, and it saves compute. The floor at 64 does not "
     "follow from anything measurable here: scaled, the softmax looks the same at "
     "Dk = 16, 32, 64, 128 (normalised entropy varies by {:.3f}), and where the rank "
     "limit starts to cost depends on the model and the task (`attn experiment "
     "dk-floor` trains heads of several widths on one task).",
     "方向是对的：更小的 Dk 会降低分数的秩（见上），随之降低一个头能表达的内容，同时节省计算。"
     "但 64 这个下限无法从这里可测的任何东西推出：缩放之后，softmax 在 Dk = 16、32、64、128 时看起来都一样"
     "（归一化熵的变化只有 {0:.3f}），而秩的限制从哪里开始造成损失，取决于模型和任务"
     "（`attn experiment dk-floor` 会在同一任务上训练多种宽度的头）。"},
    {"The experiment: for each Dk, {} dot products of random q and k with N(0, 1) entries "
     "(attn::run_variance, the code behind `attn variance`). Measured next to theory:",
     "实验：对每个 Dk，取 {0} 个点积，q 和 k 的元素服从 N(0, 1)（attn::run_variance，"
     "即 `attn variance` 背后的代码）。测量值与理论值并列如下："},
    {"q, k (one pair)", "q, k（一对）"},
    {"[Dk], drawn fresh for each sample", "[Dk]，每个样本重新抽取"},
    {"scores per Dk", "每个 Dk 的分数"},
    {"one q·k per sample", "每个样本一个 q·k"},
    {"std of q·k", "q·k 的标准差"},
    {"ratio", "比值"},
    {"typical range ±3σ", "典型范围 ±3σ"},
    {"observed 0.1%..99.9%", "观测到的 0.1%..99.9%"},
    {"std ÷√Dk", "标准差 ÷√Dk"},
    {"the std of q·k is √Dk at every Dk, within 5 standard errors of the estimate (≤ {:.2f}%)",
     "在每个 Dk 下 q·k 的标准差都等于 √Dk，误差在估计值的 5 个标准误之内（≤ {0:.2f}%）"},
    {"typical ranges ±3σ: [{:.1f}, {:.1f}] at Dk = {}, up to [{:.1f}, {:.1f}] at Dk = {}",
     "典型范围 ±3σ：Dk = {2} 时为 [{0:.1f}, {1:.1f}]，直到 Dk = {5} 时的 [{3:.1f}, {4:.1f}]"},
    {"divided by √Dk the std is 1 at every Dk ({:.3f} .. {:.3f})",
     "除以 √Dk 后，每个 Dk 下的标准差都是 1（{0:.3f} .. {1:.3f}）"},
    {"The observed extremes are wider than ±3σ at Dk = 1: a product of two normals has heavy "
     "tails. As Dk grows the sum of many products becomes normal, and ±3σ leaves out only "
     "{:.2f}% of a normal distribution.",
     "Dk = 1 时观测到的极值超出了 ±3σ：两个正态变量的乘积是重尾分布。随着 Dk 增大，许多乘积之和趋于正态，"
     "而 ±3σ 之外只有正态分布的 {0:.2f}%。"},
    {"The same samples as rows of T = {} scores through softmax (one-hot: max weight above "
     "0.99):",
     "把同样的样本排成每行 T = {0} 个分数，再经过 softmax（one-hot：最大权重高于 0.99）："},
    {"one-hot rows", "one-hot 行"},
    {"mean ‖J‖_F", "平均 ‖J‖_F"},
    {"at Dk = {}, {:.1f}% of unscaled rows are one-hot; scaled, {:.1f}%",
     "Dk = {0} 时，不缩放的行有 {1:.1f}% 是 one-hot；缩放后为 {2:.1f}%"},
    // attn experiment scale's readable C18 verdict (lib/experiments/src/exp_scale.cpp)
    {"associative recall (each row lists key-value pairs, then asks one key, and the model must answer its "
     "value); the metric is how many training steps it takes to reach 95% accuracy on held-out rows",
     "关联回忆（每行先列出若干键值对，再问其中一个键，模型要答出它的值）；指标是在留出行上达到 95% 准确率所需的训练步数"},
    {"without the scale, {} of {} settings took at least twice as many steps to reach 95% as with it, or "
     "never reached it, yet every unscaled run of this seed learned (final accuracy {} to {}; chance {}). Rows that "
     "end one-hot, the weights all ~0 or ~1: {} without the scale, {} with it",
     "不缩放时，{1} 种设置中有 {0} 种达到 95% 所需步数至少是缩放时的两倍，或者始终达不到；但这个种子上每个不缩放的训练都学到了东西"
     "（最终准确率 {2} 到 {3}；随机猜测为 {4}）。训练结束时为 one-hot 的行（权重全都约为 0 或 1）：不缩放 {5}，缩放 {6}"},
    {"attn experiment dk-floor reached no verdict: it trains one head's lookup at several d_k.",
     "attn experiment dk-floor 没有得出结论：它在几种 d_k 下训练单个头的查找。"},
    {"the lookup step of associative recall: T keys per row, each asked once, one head of width d_k learning "
     "W_q, W_k; the metric is the final accuracy on fresh rows, and the knee is the smallest d_k within 5% "
     "of the best accuracy at that T",
     "关联回忆中的查找一步：每行 T 个键，每个键问一次，一个宽度为 d_k 的头学习 W_q、W_k；指标是在新行上的最终准确率，"
     "拐点是准确率与该 T 下最佳值相差 5% 以内的最小 d_k"},
    {"knee d_k", "拐点 d_k"},
    {"accuracy at the knee", "拐点处准确率"},
    {"best accuracy", "最佳准确率"},
    {"the knee sits at d_k {} or above at every T measured (T up to {})",
     "在测量的每个 T 上（T 最大为 {1}），拐点都在 d_k {0} 或以上"},
    {"the knee sits at d_k {} at most, below 64, at every T measured (T up to {}); one head "
     "doing one lookup, so a real model's floor can sit higher, but not at a fixed 64",
     "在测量的每个 T 上（T 最大为 {1}），拐点最多在 d_k {0}，低于 64；这只是一个头做一次查找，"
     "真实模型的下限可能更高，但不是固定的 64"},
    {"with long sequences d_k may be lowered, but not below 64", "序列很长时可以减小 d_k，但不要低于 64"},
}};
}  // namespace
}  // namespace attn::lessons
