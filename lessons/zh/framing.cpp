// Chinese text of the tour's framing (catalogue part 0): the LessonContext's own
// words (lessons/lesson.cpp and the files beside it), the run header and footer, `attn lessons`, `attn
// tour`'s introduction and summary, the commonest errors (app/cmd_lessons.cpp),
// the lessons' titles and summaries, and the claim texts --quote prints
// (lessons/claims.cpp). Keys: the English exactly; {0}, {1}: its arguments in order.
#include "catalogue.hpp"

namespace attn::lessons {
namespace {
const RegisterCatalogue zh_framing{Lang::zh, kFramingPart, {
    // ---------------------------------------------------------- the context
    {"shape", "形状"},
    // the legend under a heatmap (attn/viz/heatmap.hpp)
    {"columns:", "列："},
    {"shade:", "深浅："},
    {"up to", "至"},
    {"exactly 0", "恰为 0"},
    {"scale:", "色标："},
    {"grey: -inf/nan", "灰色：-inf/nan"},
    {"claim {} not supported:", "论断 {0} 未获数据支持："},
    {"claim {} qualified:", "论断 {0} 需加限定："},
    {"\u25cb {} not measured here:", "\u25cb {0} 此处无法测量："},
    {"! error in the source ({}, {}):", "! 原文有误（{0}，{1}）："},
    {"! slip in the source ({}, {}):", "! 原文笔误（{0}，{1}）："},
    {"! imprecise in the source ({}, {}):", "! 原文不够准确（{0}，{1}）："},
    {"{} (in our words) {}", "{0}（用我们的话说）{1}"},
    {"claim {} inconclusive:", "论断 {0} 无定论："},
    {"{} in our words: {}", "{0}（用我们的话说）：{1}"},
    {"{} on seed {} ({})", "种子 {1} 为“{0}”（{2}）"},
    {"{} on seeds {} (seed {}: {})", "种子 {1} 为“{0}”（种子 {2}：{3}）"},
    {"{}: the {} stored seeds disagree ({}). `{} --seeds {}` reruns them.",
     "{0}：{1} 个已存种子的结论不一致（{2}）。`{3} --seeds {4}` 可重跑。"},
    {"The evidence for {}: {}. This verdict rests on a stored run, too long to train while you read: "
     "data/evidence/{}, made by `{}` at its {} size on seeds {} ({}, `{}`, `{}` kernels); in the table each "
     "number is the mean over those seeds with its range in brackets (the words are seed {}'s run), and "
     "a test reruns seed {} and compares.",
     "{0} 的证据：{1}。这个结论依据的是一次存档的运行，它太长，无法在阅读时现场训练：data/evidence/{2}，"
     "由 `{3}` 以{4}规模在种子 {5} 上生成（{6}，`{7}`，`{8}` 内核）；表中每个数都是这些种子的平均值，括号里是它的范围"
     "（文字取自种子 {9} 的结果），测试会重跑种子 {10} 并比对。"},
    {"(The stored run for {} cannot be used ({}); the live quick runs judge it instead.)",
     "（{0} 的存档运行无法使用（{1}）；改由现场的快速规模运行来判断。）"},
    {"full", "完整"},
    {"default", "默认"},
    {"{}: the {} training seeds disagree ({}). `{} --seeds 5` trains more seeds.",
     "{0}：{1} 个训练种子的结论不一致（{2}）。`{3} --seeds 5` 会训练更多种子。"},
    // ------------------------------------------------ verdicts, scorecard
    {"supported", "获数据支持"},
    {"qualified", "需加限定"},
    {"not supported", "未获数据支持"},
    {"inconclusive", "无定论"},
    {"not measured", "未测量"},
    {"error of the source", "原文有误"},
    {"imprecise", "措辞不严谨"},
    {"source imprecise", "原文措辞不严谨"},
    {"source slip", "原文疏漏"},
    {"measured", "测量"},
    {"identity", "恒等式"},
    {"failed", "失败"},
    {"; ", "；"},
    {": ", "："},
    {"article {}, §{}", "文章 {0}，§{1}"},
    {"no lesson of the tour tests it", "导览中没有一课测试它"},
    {"{} ({}):", "{0}（{1}）："},
    {"Scorecard of the {} claims (`attn claims` gives each one's reason and command; `attn claims ID` one in full):",
     "{0} 条论断的计分表（`attn claims` 给出每条的理由和命令；`attn claims ID` 给出一条的全部内容）："},
    {"Scorecard of the {} claims these lessons test (`attn claims` scores all of them):",
     "这几课测试的 {0} 条论断的计分表（`attn claims` 给全部论断计分）："},
    {"why: {}", "理由：{0}"},
    {"see: {} · source: {}", "查看：{0} · 出处：{1}"},
    {"Claim {}, in our words (not the article's sentence):", "论断 {0}，用我们的话说（不是原文的句子）："},
    {"Where the source says it: {}.", "原文出处：{0}。"},
    {"Verdict: {}. {}", "结论：{0}。{1}"},
    {"Shown by: {}", "演示命令：{0}"},
    {"Everything the tour records on it:", "导览对它记录的全部内容："},
    {"lesson {}", "第 {0} 课"},
    {"computing verdicts: lesson {} ({}/{})", "正在计算结论：第 {0} 课（{1}/{2}）"},
    {"claims: no claim '{}'; the ids are C1 to C{}", "claims：没有论断“{0}”；编号是 C1 到 C{1}"},
    {"The 44 claims of the two source articles, each in our words, with the verdict the tour reaches, the reason, "
     "the command that shows it and where the source says it. `attn claims C18` shows one claim in full.",
     "两篇原文的 44 条论断，每条用我们自己的话写出，附导览得出的结论、理由、演示它的命令和原文出处。`attn claims C18` 给出一条论断的全部内容。"},
    {"The training verdicts were trained here, on the seeds the tour uses.",
     "训练类结论是在这里当场训练得出的，用的是导览所用的种子。"},
    {"The training verdicts read the quick runs stored in data/evidence, the seeds the tour trains; --live trains "
     "them here again.",
     "训练类结论读取 data/evidence 中存储的 quick 规模运行，种子与导览训练的相同；--live 会在这里重新训练。"},
    // --------------------------------------------------- run header, footer
    {"Lesson {} \u00b7 {}", "第 {0} 课 \u00b7 {1}"},
    {"claims {} \u00b7 ~{} min", "论断 {0} \u00b7 约 {1} 分钟"},
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
     "  ✓ measured: a result that correct code could still have got otherwise\n"
     "    (data, training, an approximation such as finite differences);\n"
     "  ≡ identity: it follows from the definitions or a theorem, shown as a\n"
     "    demonstration; a different algorithm that is exact in exact arithmetic\n"
     "    (tiling, reordering, a cache) agreeing with the reference is ≡ too.\n"
     "    An identity fails only if attn has a bug.\n"
     "Every claim's verdict follows one written rule (docs/claims.md): supported,\n"
     "imprecise, qualified, not supported, inconclusive (the evidence cannot\n"
     "tell), ○ not measured, or error of the source (flagged with a !). A failed\n"
     "check never leaves a claim supported; `attn claims ID` gives the reasoning.\n"
     "The tour ends with the scorecard of all 44 claims.\n",
     "attn tour：用现场计算的数字讲解注意力如何工作。论断编号（C1..C44）\n"
     "指两篇原文的论断摘要。每条论断以两类检查之一收尾，都由刚打印的数字算出：\n"
     "  ✓ 测量：即使代码正确，结果也可能是另一个样子\n"
     "    （数据、训练、有限差分这样的近似）；\n"
     "  ≡ 恒等式：由定义或定理推出，作为演示展示出来；在精确算术下与参考实现\n"
     "    完全相同的另一种算法（分块、重排求和顺序、缓存）与参考结果一致，也记为 ≡。\n"
     "    恒等式只有在 attn 有程序错误时才会失败。\n"
     "每条论断的结论都按一条成文的规则给出（docs/claims.md）：获数据支持、\n"
     "措辞不严谨、需加限定、未获数据支持、无定论（证据不足以判断）、\n"
     "○ 未测量，或原文有误（以 ! 标出）。检查一旦失败，论断就不会是“获数据支持”；\n"
     "`attn claims 编号` 给出完整的理由。导览最后给出全部 44 条论断的计分表。\n"},
    {"Tour done: {} lesson; {} measured, {} identities shown, {} failed.",
     "导览结束：共 {0} 课；测量 {1} 项，展示恒等式 {2} 个，失败 {3} 项。"},
    {"Tour done: {} lessons; {} measured, {} identities shown, {} failed.",
     "导览结束：共 {0} 课；测量 {1} 项，展示恒等式 {2} 个，失败 {3} 项。"},
    {"Claims: {} not supported by the numbers, {} qualified, {} not measured here;",
     "论断：{0} 条未获数据支持，{1} 条需加限定，{2} 条此处无法测量；"},
    {"{} error of the source flagged.", "标出原文错误 {0} 处。"},
    {"{} errors of the source flagged.", "标出原文错误 {0} 处。"},
    {"[Enter: next section, q + Enter: stop]", "[回车：下一节，q + 回车：停止]"},
    {"training the evidence for {}: {}, seed {} of {}", "为 {0} 训练证据：{1}，第 {2} 个种子（共 {3} 个）"},
    {"lesson {} ({}/{})", "第 {0} 课（{1}/{2}）"},
    {"Lesson {}: its steps in the Transformer block", "第 {0} 课：它讲的是 Transformer 块中的哪几步"},
    {"The Transformer block, step by step; under each step, the lessons that explain it",
     "Transformer 块的每一步；每一步下方是讲解它的课"},
    {"{}  [{}, ~{} min]", "{0}  [{1}，约 {2} 分钟]"},
    {"* the core ({} lessons, ~{} min: `attn tour --core`); the others are the advanced part ({} lessons, ~{} min: "
     "`attn tour --advanced`).",
     "* 标出核心部分（{0} 课，约 {1} 分钟：`attn tour --core`）；其余是进阶部分（{2} 课，约 {3} 分钟：`attn tour --advanced`）。"},
    {"The whole tour is {} lessons, about {} minutes of reading. For a first sitting, `attn tour --core` reads the {} "
     "core lessons ({}) in about {} minutes; `attn tour --advanced` is the rest.",
     "整个导览共 {0} 课，约需阅读 {1} 分钟。第一次学习可用 `attn tour --core`：{2} 节核心课（{3}），约 {4} 分钟；`attn tour --advanced` 是其余部分。"},
    {"The core of the tour: lessons {}, about {} minutes of reading. `attn tour --advanced` goes on with the rest.",
     "导览的核心部分：第 {0} 课，约需阅读 {1} 分钟。`attn tour --advanced` 接着讲其余部分。"},
    {"The advanced part of the tour: lessons {}, about {} minutes of reading.", "导览的进阶部分：第 {0} 课，约需阅读 {1} 分钟。"},
    {"This part of the tour: lessons {}, about {} minutes of reading.", "导览的这一部分：第 {0} 课，约需阅读 {1} 分钟。"},
    {"--core: and --advanced: are the two parts of the tour; give one (or neither, for the whole tour)",
     "--core 与 --advanced 是导览的两个部分；只能给出其一（都不给则为整个导览）"},
    {"--from/--to: lessons {} to {} hold no lesson that {} takes", "--from/--to：第 {0} 到 {1} 课中没有 {2} 所选的课"},
    {"The lessons of `attn tour`, in order. Run one with `attn lesson NUMBER|NAME`.",
     "`attn tour` 的各课，按顺序列出。用 `attn lesson 编号|名称` 单独运行一课。"},
    {"lesson: which lesson? give its number or name (the list above)", "lesson：哪一课？请给出编号或名称（见上面的列表）"},
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
    {"key padding [B, 1, 1, T], causal, both; -inf before softmax vs zeroing after; fill values",
     "键填充掩码 [B, 1, 1, T]、因果掩码、两者合用；softmax 前填 -inf 与之后置零；填充值"},
    {"The mask smoke test", "掩码冒烟测试"},
    {"one printed row catches masks applied the wrong way round", "打印一行就能发现方向用反的掩码"},
    {"Multi-head attention", "多头注意力"},
    {"512 = 8 × 64 at the cost of one wide head; merging needs the transpose; a whole block, by hand, on a "
     "trained model",
     "512 = 8 × 64，代价与一个宽的单头相同；合并各头需要转置；在训练好的模型上手工算一整个块"},
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
    {"Induction heads", "归纳头"},
    {"a 2-layer attention-only decoder learns to copy from its context: the phase change, the "
     "previous-token and induction heads, ablation",
     "两层、只有注意力的解码器学会从上下文中复制：相变、前一 token 头与归纳头、消融"},
    // the readable form of a training verdict (LessonContext::readable_verdict) and the words of its tables
    {"The evidence for {}: {}. `{}` trains it live at its quick size on seeds {}; in the table each "
     "number is the mean over those seeds with its range in brackets (the words are seed {}'s run). "
     "The verdict follows the rule of docs/claims.md; `attn claims {}` gives its full reasoning.",
     "{0} 的证据：{1}。`{2}` 以快速规模在种子 {3} 上现场训练；表中每个数都是这些种子的平均值，括号里是它的范围"
     "（文字取自种子 {4} 的结果）。结论按 docs/claims.md 的规则得出；`attn claims {5}` 给出完整的理由。"},
    {"{} on {}/{} seeds, {} on the others", "{1}/{2} 个种子上为 {0}，其余为{3}"},
    {"The evidence for {}: {}. `{}` at its quick size, seeds {}, read as above.",
     "{0} 的证据：{1}。`{2}`，快速规模，种子 {3}，读法同上。"},
    {"{}: {} ({} on all {} training seeds; `{}` reruns it)", "{0}：{1}（全部 {3} 个训练种子都是“{2}”；`{4}` 可重跑）"},
    {"optimiser", "优化器"},
    {"scale", "缩放"},
    {"steps to 95%", "达到 95% 的步数"},
    {"final accuracy", "最终准确率"},
    {"reached 95%?", "达到 95%？"},
    {"adamw", "AdamW"},
    {"sgd", "SGD"},
    {"1/sqrt(d_k)", "1/√d_k"},
    {"never", "从未达到"},
    {"yes", "是"},
    {"no", "否"},
}};
}  // namespace
}  // namespace attn::lessons
