// Chinese text of the tour's framing (catalogue part 0): the LessonContext's own
// words (lessons/lesson.cpp), the run header and footer, `attn lessons`, `attn
// tour`'s introduction and summary, the commonest errors (app/cmd_lessons.cpp),
// the lessons' titles and summaries, and the claim texts --quote prints
// (lessons/claims.cpp). Keys: the English exactly; {0}, {1}: its arguments in order.
#include "catalogue.hpp"

namespace attn::lessons {
namespace {
const RegisterCatalogue zh_framing{Lang::zh, kFramingPart, {
    // ---------------------------------------------------------- the context
    {"shape", "形状"},
    {"claim {} not supported:", "论断 {0} 未获数据支持："},
    {"claim {} qualified:", "论断 {0} 需加限定："},
    {"\u25cb {} not measured here:", "\u25cb {0} 此处无法测量："},
    {"! error in the source ({}):", "! 原文有误（{0}）："},
    {"{} says \u201c{}\u201d", "{0} 论断：\u201c{1}\u201d"},
    {"{}: {} ({}, measured live at --quick size; {} for the full run)",
     "{0}：{1}（{2}，以 --quick 规模现场测得；完整运行用 {3}）"},
    {"supported by training: {}", "训练结果支持：{0}"},
    // --------------------------------------------------- run header, footer
    {"Lesson {} \u00b7 {}", "第 {0} 课 \u00b7 {1}"},
    {"claims {}", "论断 {0}"},
    {"Lesson {} done: {} measured, {} identity shown, {} failed",
     "第 {0} 课完成：测量 {1} 项，展示恒等式 {2} 个，失败 {3} 项"},
    {"Lesson {} done: {} measured, {} identities shown, {} failed",
     "第 {0} 课完成：测量 {1} 项，展示恒等式 {2} 个，失败 {3} 项"},
    {"; {} claim qualified", "；{0} 条论断需加限定"},
    {"; {} claims qualified", "；{0} 条论断需加限定"},
    {"; {} source claim not supported", "；{0} 条原文论断未获数据支持"},
    {"; {} source claims not supported", "；{0} 条原文论断未获数据支持"},
    {".", "。"},
    // --------------------------------------------------- attn tour, lessons
    {"attn tour: how attention works, shown with live numbers. Claim ids (C1..C44)\n"
     "refer to the summary of the two source articles. Two kinds of check close\n"
     "each claim, both computed from the numbers just printed:\n"
     "  ✓ measured: an empirical result that could have come out otherwise;\n"
     "  ≡ identity: true by construction or by a theorem, shown as a demonstration\n"
     "    (it fails only if attn has a bug).\n"
     "A claim the numbers contradict is reported as not supported, one that holds\n"
     "only with a caveat as qualified, one attn cannot measure as ○ not measured,\n"
     "and an error in the source's own text or code is flagged with a !.\n",
     "attn tour：用现场计算的数字讲解注意力如何工作。论断编号（C1..C44）\n"
     "指两篇原文的论断摘要。每条论断以两类检查之一收尾，都由刚打印的数字算出：\n"
     "  ✓ 测量：经验结果，本可能是另一个样子；\n"
     "  ≡ 恒等式：由构造或定理保证成立，作为演示展示出来\n"
     "    （只有 attn 有程序错误时才会失败）。\n"
     "数字与之矛盾的论断标为“未获数据支持”，只在附加条件下成立的标为\n"
     "“需加限定”，attn 无法测量的标为“○ 此处无法测量”，原文自身文字或\n"
     "代码中的错误以 ! 标出。\n"},
    {"Tour done: {} lesson; {} measured, {} identities shown, {} failed.",
     "导览结束：共 {0} 课；测量 {1} 项，展示恒等式 {2} 个，失败 {3} 项。"},
    {"Tour done: {} lessons; {} measured, {} identities shown, {} failed.",
     "导览结束：共 {0} 课；测量 {1} 项，展示恒等式 {2} 个，失败 {3} 项。"},
    {"Claims: {} not supported by the numbers, {} qualified, {} not measured here;",
     "论断：{0} 条未获数据支持，{1} 条需加限定，{2} 条此处无法测量；"},
    {"{} error of the source flagged.", "标出原文错误 {0} 处。"},
    {"{} errors of the source flagged.", "标出原文错误 {0} 处。"},
    {"[Enter: next section, q + Enter: stop]", "[回车：下一节，q + 回车：停止]"},
    {"The lessons of `attn tour`, in order. Run one with `attn lesson NUMBER|NAME`.",
     "`attn tour` 的各课，按顺序列出。用 `attn lesson 编号|名称` 单独运行一课。"},
    {"lesson: no lesson '{}'; give a number (1-{}) or a name: {}",
     "lesson：没有名为 '{0}' 的课；请给出编号（1-{1}）或名称：{2}"},
    {"{}: must be a lesson number in [{}, {}], got '{}'", "{0}：必须是 [{1}, {2}] 内的课程编号，得到的是 '{3}'"},
    {"--svg: lesson '{}' draws no heatmap (lessons with heatmaps: {})",
     "--svg：课程 '{0}' 不画热力图（画热力图的课程：{1}）"},
    {"--svg: lesson '{}' drew no heatmap this time, so no SVG was written",
     "--svg：课程 '{0}' 这次没有画出热力图，因此没有写出 SVG"},
    {"attn lesson {} ({}): attention weights", "attn lesson {0}（{1}）：注意力权重"},
    {"each panel: rows are queries, columns are keys; seed {}", "每个面板：行是查询，列是键；种子 {0}"},
    {"wrote {} ({} heatmap)", "已写出 {0}（{1} 张热力图）"},
    {"wrote {} ({} heatmaps)", "已写出 {0}（{1} 张热力图）"},
    {"{} check failed (a ✗ line is a bug in attn: please report it)",
     "{0} 项检查失败（✗ 行表示 attn 有程序错误，请报告）"},
    {"{} checks failed (a ✗ line is a bug in attn: please report it)",
     "{0} 项检查失败（✗ 行表示 attn 有程序错误，请报告）"},
    // ------------------------------------------- the lessons' titles, summaries
    {"Attention is a soft lookup", "注意力是一种软检索"},
    {"a toy dictionary answered by a blend of values; a running summary that forgets far tokens",
     "一本用值的加权混合作答的玩具字典；会遗忘远处 token 的滚动摘要"},
    {"Q, K and V", "Q、K 与 V"},
    {"three projections of x with their shapes; nn.Linear's [out, in]; Dv may differ from Dk",
     "x 的三个投影及其形状；nn.Linear 的 [out, in]；Dv 可以不等于 Dk"},
    {"The dot product as a score", "用点积作分数"},
    {"score = |q||k|cos θ; a longer vector gets a bigger score", "分数 = |q||k|cos θ；向量越长，分数越大"},
    {"Softmax and saturation", "Softmax 与饱和"},
    {"softmax([0, 3]) and ([0, 30]); the Jacobian's norm collapses as a row nears one-hot",
     "softmax([0, 3]) 与 ([0, 30])；一行接近 one-hot 时雅可比矩阵的范数随之塌缩"},
    {"Why divide by √Dk", "为什么要除以 √Dk"},
    {"the variance of q·k grows with Dk; unscaled scores saturate softmax; the 64 folklore",
     "q·k 的方差随 Dk 增大；不缩放的分数使 softmax 饱和；关于 64 的经验说法"},
    {"Alternatives to √Dk", "√Dk 的替代方案"},
    {"a fixed constant suits one Dk only; cosine bounds scores but forgets vector length",
     "固定常数只适合一个 Dk；余弦相似度限定了分数范围，却丢掉了向量长度"},
    {"One head, end to end", "单头注意力，从头到尾"},
    {"the source's B=2, T=6, D=16 example with every shape; the Kᵀ pitfall",
     "原文 B=2、T=6、D=16 的例子及每一步的形状；Kᵀ 的陷阱"},
    {"Masks", "掩码"},
    {"key padding [B, 1, T], causal, both; -inf before softmax vs zeroing after; fill values",
     "键填充掩码 [B, 1, T]、因果掩码、两者合用；softmax 前填 -inf 与之后置零；填充值"},
    {"The mask smoke test", "掩码冒烟测试"},
    {"one printed row catches masks applied the wrong way round", "打印一行就能发现方向用反的掩码"},
    {"Multi-head attention", "多头注意力"},
    {"512 = 8 × 64; the cost is the same as one wide head; merging heads needs the transpose",
     "512 = 8 × 64；计算量与一个宽的单头相同；合并各头需要转置"},
    {"Diagnosing heads", "诊断注意力头"},
    {"per-head mean entropy, head-to-head divergence, a planted duplicate found",
     "每个头的平均熵、头与头之间的散度，找出预先埋入的重复头"},
    {"Attention dropout", "注意力 dropout"},
    {"on weights after softmax vs on scores; train vs eval; row sums and distortion",
     "作用于 softmax 之后的权重还是分数；训练与评估模式；行和与失真"},
    {"Debugging attention", "调试注意力"},
    {"shape assertions; bmm vs broadcasting matmul; init scale vs score spread; zero init",
     "形状断言；bmm 与广播 matmul；初始化尺度与分数分布；全零初始化"},
    {"Memory and long sequences", "内存与长序列"},
    {"the [B, H, T, T] matrix's bytes; an online softmax; flash vs reference; sparse and linear",
     "[B, H, T, T] 矩阵的字节数；在线 softmax；flash 与参考实现；稀疏注意力与线性注意力"},
    {"Real heads", "真实模型的注意力头"},
    {"a pretrained encoder's heads: entropy vs random init, sinks, \"it\" -> \"animal\", padding",
     "预训练编码器的注意力头：熵与随机初始化对比、注意力汇聚点、\"it\" -> \"animal\"、填充"},
    {"The backward pass of attention", "注意力的反向传播"},
    {"dV = Pᵀ·dO, dP = dO·Vᵀ, dS = P∘(dP − rowsum(P∘dP)), checked; saturated rows pass no gradient",
     "验证 dV = Pᵀ·dO、dP = dO·Vᵀ、dS = P∘(dP − rowsum(P∘dP))；饱和的行传不回梯度"},
    {"Positional information", "位置信息"},
    {"attention is blind to order; sinusoidal and learned positions; trained with and without",
     "注意力看不见顺序；正弦位置编码与可学习位置编码；有无位置信息的训练对比"},
    {"GQA and MQA: fewer key/value heads", "GQA 与 MQA：更少的键/值头"},
    {"grouped-query and multi-query attention: same output shapes, a fraction of the K/V bytes",
     "分组查询注意力与多查询注意力：输出形状不变，K/V 字节数只占一部分"},
    {"RoPE and ALiBi: positions inside the score", "RoPE 与 ALiBi：把位置放进分数"},
    {"absolute positions vs RoPE (relative position in q·k) vs ALiBi (a distance penalty)",
     "绝对位置、RoPE（q·k 中的相对位置）与 ALiBi（距离惩罚）的对比"},
    {"Cross-attention", "交叉注意力"},
    {"a decoder reading an encoder's output: Tq ≠ Tk, kdim/vdim, the mask on the source's keys",
     "解码器读取编码器的输出：Tq ≠ Tk、kdim/vdim、作用于源序列键上的掩码"},
    {"The KV cache", "KV 缓存"},
    {"why causal attention runs one token at a time, what the cache holds, saves and costs (GQA, MQA)",
     "因果注意力为何可以一次算一个 token，缓存存了什么、省了什么、花费多少（GQA、MQA）"},
}};
}  // namespace
}  // namespace attn::lessons
