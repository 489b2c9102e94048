// Chinese text of lesson 7 (lessons/07_one_head.cpp). Keys: the lesson's
// English exactly; {0}, {1}: the English template's arguments in order.
#include "catalogue.hpp"

namespace attn::lessons {
namespace {
const RegisterCatalogue zh07{Lang::zh, 7, {
    {"The recipe, step by step", "计算流程，逐步展开"},
    {"The sizes of the source's first example: a batch of 2 sequences, 6 tokens each, 16 features per "
     "token, and one head with Dk = Dv = 16. We write the head out by hand with plain matrix products, "
     "print every shape, and then ask the library's reference attention for the same thing. The "
     "projections here are nn.Linear's, initialised as PyTorch does (uniform, about 1/√16 in size); the "
     "example's own weights come after, and why we do not use them.",
     "沿用原文第一个例子的尺寸：一个批次 2 条序列，每条 6 个 token，每个 token 16 个特征，一个头，Dk = Dv = 16。"
     "我们用普通的矩阵乘法手写这个头，打印每一步的形状，再让库里的参考注意力实现算同一件事。这里的投影用 "
     "nn.Linear，按 PyTorch 的方式初始化（均匀分布，大小约为 1/√16）；例子自己的权重放在后面讲，并说明为什么不用它们。"},
    {"the first example draws W_q, W_k, W_v with torch.randn(d_model, d_k)",
     "第一个例子用 torch.randn(d_model, d_k) 生成 W_q、W_k、W_v"},
    {"gives the right shapes but a head already saturated: with entries of std 1 the scaled "
     "scores have a spread of {:.1f} (about d_model = {}, where the 1/√Dk scaling aims at 1), "
     "and {} of the {} rows are one-hot (largest weight above 0.99). The same source warns "
     "against exactly this, too large a W_q, W_k init (its debugging section, C36). nn.Linear's "
     "init, used above, keeps the spread near 1.",
     "形状是对的，但这个头一开始就饱和了：元素标准差为 1 时，缩放后的分数标准差为 {0:.1f}（约等于 d_model = {1}，"
     "而 1/√Dk 缩放的目标是 1），{3} 行中有 {2} 行是 one-hot（最大权重超过 0.99）。原文自己在调试一节（C36）"
     "警告的正是这种过大的 W_q、W_k 初始化。上面用的 nn.Linear 初始化让标准差保持在 1 附近。"},
    {"K.transpose(-2, -1)", "K.transpose(-2, -1)"},
    {"scores", "分数"},
    {"weights", "权重"},
    {"softmax(scores / √16, dim=-1)", "softmax(分数 / √16, dim=-1)"},
    {"out", "输出"},
    {"weights·V", "权重·V"},
    {"Q, K, V {} → scores {} → weights {} → out {}, as the source lists",
     "Q、K、V {0} → 分数 {1} → 权重 {2} → 输出 {3}，与原文列出的一致"},
    {"every row of weights sums to 1 (max |sum−1| = {})", "权重的每一行之和都为 1（最大 |sum−1| = {0}）"},
    {"the hand-written head equals attention_reference (max diff {})",
     "手写的头与 attention_reference 相等（最大差 {0}）"},
    {"weights of batch 0 (rows: queries, columns: keys)", "批次 0 的权重（行：查询，列：键）"},
    {"The tokens are only labels here: x is random, so the pattern means nothing yet. Each row is "
     "one query's weights over the six keys and sums to 1.",
     "这里的 token 只是标签：x 是随机的，所以这个图案还没有任何含义。每一行是一个查询在六个键上的权重，"
     "和为 1。"},
    {"Kᵀ, not K Qᵀ, not Q K", "是 Kᵀ，不是 K Qᵀ，也不是 Q K"},
    {"The scores need Q·Kᵀ: row i holds query i against every key, so softmax over the last "
     "dimension spreads query i's attention over the keys. Swapping the operands, K·Qᵀ, runs without "
     "complaint and returns the transpose: softmax then normalises over queries, which is a different "
     "(wrong) model.",
     "分数要用 Q·Kᵀ：第 i 行是查询 i 对每个键的分数，所以在最后一维上做 softmax，就把查询 i 的注意力"
     "分配到各个键上。交换两个操作数写成 K·Qᵀ，程序照样运行、不报任何错，返回的却是转置：softmax "
     "于是在查询上归一化，那是另一个（错误的）模型。"},
    {"K·Qᵀ is the transpose of Q·Kᵀ (max diff {}), not Q·Kᵀ itself (max diff {})",
     "K·Qᵀ 是 Q·Kᵀ 的转置（最大差 {0}），而不是 Q·Kᵀ 本身（最大差 {1}）"},
    {"…and the output with K·Qᵀ differs from the right one by up to {}",
     "……而用 K·Qᵀ 得到的输出与正确结果最多相差 {0}"},
    {"Forgetting the transpose altogether, Q·K, multiplies [6, 16] by [6, 16]: the inner sizes "
     "differ and the product is refused.",
     "如果完全忘了转置，写成 Q·K，就是 [6, 16] 乘 [6, 16]：内侧的维度不一致，乘法被拒绝。"},
    {"Q·K without the transpose raises a shape error", "不转置的 Q·K 会引发形状错误"},
    {"That error is luck: it only happens because T ≠ Dk. With T = Dk = 16 the same bug runs and "
     "returns numbers:",
     "这个报错只是运气：它之所以出现，仅仅因为 T ≠ Dk。当 T = Dk = 16 时，同样的错误照常运行，"
     "还会返回数字："},
    {"with T = Dk, Q·K runs and returns a [1, 16, 16] tensor that differs from Q·Kᵀ by up to {}",
     "T = Dk 时，Q·K 能运行并返回一个 [1, 16, 16] 张量，它与 Q·Kᵀ 最多相差 {0}"},
    {"A shape assertion cannot catch this one: with T = Dk the wrong product has the right shape. "
     "What catches it is a test whose sizes all differ (T ≠ Dk, where Q·K is refused, as above) and a "
     "comparison of the values with a reference.",
     "形状断言抓不到这个错误：T = Dk 时，错误的乘积形状恰好正确。能抓到它的是各个尺寸互不相同的测试"
     "（T ≠ Dk，此时 Q·K 会被拒绝，如上所示），以及把数值与参考实现对比。"},
    {"stands, but the first article's debugging section says the swapped product, "
     "torch.bmm(K, Q.transpose(-2, -1)), gives a completely wrong shape. Its shape is the "
     "right one, {} ([B, T, T]); what is wrong is its values, the transpose of the scores "
     "(above). That is what makes the slip dangerous: no shape check sees it.",
     "这一点成立，但第一篇文章的调试一节说，把顺序写反的 torch.bmm(K, Q.transpose(-2, -1)) "
     "会得到完全错误的形状。其实它的形状是对的，{0}（[B, T, T]）；错的是数值，即分数的转置（见上）。"
     "正因如此这个笔误才危险：任何形状检查都看不出来。"},
}};
}  // namespace
}  // namespace attn::lessons
