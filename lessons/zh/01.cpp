// Chinese text of lesson 1 (lessons/01_soft_lookup.cpp). Keys: the lesson's
// English exactly; {0}, {1}: the English template's arguments in order.
#include "catalogue.hpp"

namespace attn::lessons {
namespace {
const RegisterCatalogue zh01{Lang::zh, 1, {
    {"A dictionary you can ask vaguely", "一本可以模糊提问的字典"},
    {"A Python dict answers only exact questions: d[\"cat\"] returns one value, and a key that is "
     "almost right returns nothing. Attention is a dictionary that accepts vague questions. Each entry "
     "has a key (what the entry is about) and a value (what it holds). A query is compared with every "
     "key; the better the match, the larger that entry's share of the answer. The answer is a blend of "
     "all the values.",
     "Python 的 dict 只回答精确的问题：d[\"cat\"] 返回一个值，而一个差一点就对的键什么也得不到。"
     "注意力是一本接受模糊提问的字典。每个条目有一个键（条目讲的是什么）和一个值（条目装的是什么）。"
     "查询与每个键逐一比较：匹配得越好，该条目在答案里所占的份额就越大。答案是所有值的加权混合。"},
    {"Our toy dictionary has five entries. Keys have three features (is-animal, is-vehicle, flies); "
     "values have two (legs, wheels). These numbers are the lesson's input; everything after is "
     "computed.",
     "我们的玩具字典有五个条目。键有三个特征（是动物、是交通工具、会飞）；值有两个（腿数、轮子数）。"
     "这些数字是本课的输入，之后的一切都是计算出来的。"},
    {"keys K", "键 K"},
    {"[B=1, H=1, 5 entries, Dk=3]", "[B=1, H=1, 5 个条目, Dk=3]"},
    {"values V", "值 V"},
    {"[1, 1, 5 entries, Dv=2]", "[1, 1, 5 个条目, Dv=2]"},
    {"query q", "查询 q"},
    {"\"an animal that does not fly?\" = (2, 0, -1)", "“不会飞的动物？” = (2, 0, -1)"},
    {"scores", "分数"},
    {"q·Kᵀ / √3, one per entry", "q·Kᵀ / √3，每个条目一个"},
    {"weights", "权重"},
    {"softmax(scores)", "softmax(分数)"},
    {"answer", "答案"},
    {"weights · V", "权重 · V"},
    {"entry", "条目"},
    {"key", "键"},
    {"score", "分数"},
    {"weight", "权重"},
    {"value", "值"},
    {"cat", "猫"},
    {"dog", "狗"},
    {"bird", "鸟"},
    {"car", "汽车"},
    {"bicycle", "自行车"},
    {"The answer is ({:.3f} legs, {:.3f} wheels): mostly the walking animals' values, a "
     "little of the bird's and the vehicles'. A hard lookup would have returned one entry ({}) whole.",
     "答案是（{0:.3f} 条腿，{1:.3f} 个轮子）：主要来自会走路的动物的值，鸟和交通工具的值只占一点。"
     "硬查找则会原封不动地返回某一个条目（{2}）。"},
    {"every value contributes: smallest weight = {} > 0", "每个值都有贡献：最小权重 = {0} > 0"},
    {"weights sum to 1 (|sum-1| = {})", "权重之和为 1（|sum-1| = {0}）"},
    {"answer = Σ weight·value computed by hand (max diff {})", "答案 = 手算的 Σ 权重·值（最大差 {0}）"},
    {"Two kinds of check close each claim. ✓ marks a measurement, a result that could have "
     "come out otherwise. ≡ marks an identity, true by construction or by a theorem: it is shown "
     "so you can see it hold, and would fail only through a bug. Identities hold up to float32 "
     "rounding (machine epsilon {}): differences of 1e-8 to 1e-7 below are rounding, not error.",
     "每条论断都以两类检查之一收尾。✓ 表示测量：结果本可能是另一个样子。≡ 表示恒等式：它由构造或定理保证成立，"
     "展示出来是为了让你亲眼看到它成立，只有程序出错时才会失败。恒等式在 float32 舍入误差（机器精度 {0}）范围内成立："
     "下面 1e-8 到 1e-7 量级的差异是舍入，不是错误。"},
    {"Sharper questions, harder lookups", "问题越尖锐，检索越接近硬查找"},
    {"Multiply the query by a factor and the scores grow with it; the softmax then concentrates on the "
     "best match. A very confident query behaves almost like an exact lookup; a timid one averages "
     "everything.",
     "把查询乘以一个系数，分数随之放大，softmax 就会集中到最匹配的条目上。非常笃定的查询几乎就是精确查找；"
     "犹豫的查询则把所有条目平均起来。"},
    {"query × c", "查询 × c"},
    {"w(cat)", "w(猫)"},
    {"w(dog)", "w(狗)"},
    {"w(bird)", "w(鸟)"},
    {"w(car)", "w(汽车)"},
    {"w(bicycle)", "w(自行车)"},
    {"max weight", "最大权重"},
    {"a larger query gives a sharper lookup: max weight {} < {} < {}",
     "查询越大，检索越尖锐：最大权重 {0} < {1} < {2}"},
    {"A running summary forgets; attention does not (C1, C4)", "滚动摘要会遗忘，注意力不会（C1、C4）"},
    {"An RNN reads a sentence one token at a time and keeps a single state vector of fixed size. The "
     "simplest such summary is a running average h ← a·h + (1−a)·x. Every step shrinks what is already "
     "in h by a, so a token's share of the final state decays with its distance from the end.",
     "RNN 一次读一个 token，只保留一个固定大小的状态向量（隐藏状态）。最简单的这种摘要是滚动平均 "
     "h ← a·h + (1−a)·x。每一步都把 h 里已有的内容乘以 a 缩小，所以一个 token 在最终状态里的份额"
     "随它离句尾的距离而衰减。"},
    {"tokens X", "token X"},
    {"[1, 1, T=64, D=16], random", "[1, 1, T=64, D=16]，随机"},
    {"token position", "token 位置"},
    {"distance to end", "距句尾的距离"},
    {"share in running average (a = 0.9)", "在滚动平均中的份额（a = 0.9）"},
    {"attention weight on it", "注意力给它的权重"},
    {"The running average keeps a vanishing trace of the first token. The attention query that looks "
     "for it (a scaled copy of that token's own key, 2·x_t, built to match it) gives it a weight that "
     "has nothing to do with distance: here {} to {} at the four positions, set by how far that "
     "token's key stands out from the other {} random keys. The first token is compared with the "
     "query directly, like every other token.",
     "滚动平均里，第一个 token 只剩下几乎消失的痕迹。而寻找它的注意力查询（就是该 token 自己的键放大一倍，"
     "2·x_t，专门造来与它匹配）给它的权重与距离毫无关系：这里四个位置上是 {0} 到 {1}，取决于该 token 的键"
     "在其余 {2} 个随机键中有多突出。第一个 token 和其他所有 token 一样，直接与查询比较。"},
    {"the summary forgets: the first token's share is {} of the last token's",
     "摘要会遗忘：第一个 token 的份额只有最后一个 token 的 {0}"},
    {"attention reaches the first token directly: weight {} vs running-average share {}",
     "注意力直接触及第一个 token：权重 {0}，而滚动平均中的份额为 {1}"},
    {"move the token from position 0 to {}: its weight changes by {} (distance plays no part)",
     "把该 token 从位置 0 移到 {0}：它的权重变化 {1}（距离不起作用）"},
    {"the source's \"errors concentrate on sentences longer than ~40 tokens\" is about a trained "
     "text classifier; this lesson shows the mechanism (the decay above), not that figure. "
     "attn experiment distance trains an RNN and one attention layer on \"the token d steps back\".",
     "原文“误差集中在超过约 40 个 token 的长句上”说的是训练好的文本分类器；本课展示的是机制（上面的衰减），"
     "而不是那个数字。attn experiment distance 会在“往回数第 d 个 token”任务上训练一个 RNN 和一层注意力。"},
    {"an RNN's errors concentrate on far tokens (the source: past ~40 tokens)",
     "RNN 的误差集中在远处的 token 上（原文：约 40 个 token 之后）"},
    {"All positions at once (C2)", "所有位置同时计算（C2）"},
    {"The running summary needs step t−1 finished before step t: T steps in a row. Attention computes "
     "every position's output from the same Q, K, V with two matrix products, and no position waits "
     "for another. The check: compute all 64 outputs in one call, then each one alone; they agree.",
     "滚动摘要必须等第 t−1 步算完才能算第 t 步：T 步依次进行。注意力用两次矩阵乘法，从同一组 Q、K、V "
     "算出每个位置的输出，没有哪个位置需要等待别的位置。检查方法：一次调用算出全部 64 个输出，"
     "再逐个单独计算，两者一致。"},
    {"out", "输出"},
    {"all 64 positions in one call", "一次调用算出全部 64 个位置"},
    {"each position's output is independent of the others' work (64 single-row calls vs one call: max diff {})",
     "每个位置的输出不依赖其他位置的计算（64 次单行调用对比一次调用：最大差 {0}）"},
    {"self-attention weights, top-left {} × {} of [{}, {}] (row = query)",
     "自注意力权重，[{2}, {3}] 左上角的 {0} × {1}（行 = 查询）"},
    {"Each row is one query's weights over the first {} keys (the rest of the row holds the "
     "remaining mass). The bright diagonal is there only because this lesson uses the tokens themselves as queries "
     "and keys (Q = K = X): a random vector's dot product with itself, its squared length, beats its dot "
     "product with another random vector. A real layer projects the queries and keys with separate "
     "learned matrices, and then nothing favours the diagonal:",
     "每一行是一个查询在前 {0} 个键上的权重（该行其余的权重落在后面的键上）。对角线之所以明亮，"
     "只是因为本课直接用 token 本身充当查询和键（Q = K = X）：随机向量与自身的点积（即长度的平方）"
     "大于它与另一个随机向量的点积。真实的注意力层用各自学习的矩阵分别投影查询和键，这时对角线就不再占优："},
    {"Q, K (projected)", "Q、K（投影后）"},
    {"rows whose largest weight is their own position: {:.0f}% with Q = K = X, {:.0f}% with "
     "separate random projections (chance: {:.1f}%)",
     "最大权重落在自身位置的行：Q = K = X 时为 {0:.0f}%，分别随机投影时为 {1:.0f}%（随机水平：{2:.1f}%）"},
    // attn experiment distance's readable C1 verdict (lib/experiments/src/exp_distance.cpp)
    {"the distance task: at every position, output the token seen d steps back; an RNN (64 hidden units, its whole "
     "past in one state) and one attention layer train for the same number of steps; the metric is held-out accuracy "
     "at each distance d",
     "距离任务：在每个位置输出 d 步之前见过的 token；一个 RNN（64 个隐藏单元，整个过去压在一个状态里）和一个注意力层训练同样多的步数；指标是每个距离 d 上的留出准确率"},
    {"distance d", "距离 d"},
    {"RNN accuracy", "RNN 准确率"},
    {"attention accuracy", "注意力准确率"},
    {"the RNN never falls below {} (half-way between chance and perfect) up to d = {} "
     "(distances measured: {}), and attention's lowest accuracy at any d is {}",
     "直到 d = {1}，RNN 都没有低于 {0}（随机猜测与完全正确的中点）（测量的距离：{2}），注意力在各个 d 上的最低准确率为 {3}"},
    {"the RNN falls below {} (half-way between chance and perfect) by d = {} (distances "
     "measured: {}) while attention's lowest accuracy at any d is {}: far tokens fade in the "
     "RNN. The source's ~40 is a sentence length in a text classifier, not a copy distance, "
     "so it is not compared here",
     "到 d = {1} 时 RNN 已低于 {0}（随机猜测与完全正确的中点）（测量的距离：{2}），而注意力在各个 d 上的最低准确率为 "
     "{3}：在 RNN 里，远处的 token 会逐渐淡去。原文说的约 40 是文本分类器里的句子长度，不是复制距离，所以这里不拿它比较"},
}};
}  // namespace
}  // namespace attn::lessons
