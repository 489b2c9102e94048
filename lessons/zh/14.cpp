// Chinese text of lesson 14 (lessons/14_memory.cpp). Keys: the lesson's
// English exactly; {0}, {1}: the English template's arguments in order. Byte
// counts ("8.0 MiB") and the variants' names (`attn variants`) are data and are
// not looked up.
#include "catalogue.hpp"

namespace attn::lessons {
namespace {
const RegisterCatalogue zh14{Lang::zh, 14, {
    // ------------------------------------------------------------ 14.1
    {"The score matrix grows as T²", "分数矩阵按 T² 增长"},
    {"Written the plain way, attention builds the scores for every (query, key) pair: a [B, H, T, T] "
     "tensor, and the weights after softmax are another one. Double the sequence and it grows "
     "fourfold, while the inputs and the output only double. For one sequence with 8 heads of 64:",
     "按最直接的写法，注意力要为每一个（查询，键）对算出分数：一个 [B, H, T, T] 张量，softmax 之后的权重"
     "又是一个。序列长度翻一倍，它就变成四倍，而输入和输出只翻一倍。对一个序列、8 个 64 维的头而言："},
    {"one [1, 8, T, T] float32 tensor", "一个 [1, 8, T, T] float32 张量"},
    {"Q, K, V and output together", "Q、K、V 与输出合计"},
    {"4× the length, 16× the memory: {} → {}", "长度变为 4 倍，内存变为 16 倍：{0} → {1}"},
    // ------------------------------------------------------------ 14.2
    {"An online softmax, tile by tile", "在线 softmax，逐块计算"},
    {"The way out is to never hold a whole row of scores. Walk over the keys in tiles and keep, for "
     "each query, three running things: the largest score seen so far m, the sum of exp(score − m) "
     "so far l, and the weighted sum of values so far. When a tile brings a larger score, rescale "
     "what you have by exp(m_old − m_new) and go on. At the end, divide by l. Here is one query over "
     "12 keys in tiles of 4, written out in the lesson itself:",
     "出路是永远不持有一整行分数。把键分成块逐块走过，并为每个查询维护三个随时更新的量：迄今见到的最大分数 m，"
     "迄今 exp(分数 − m) 之和 l，以及迄今值的加权和。某一块带来更大的分数时，就把手上已有的量乘以 "
     "exp(m_old − m_new) 重新缩放，然后继续。最后除以 l。下面是一个查询、12 个键、每块 4 个键的计算过程，"
     "直接写在本课的代码里："},
    // the header of a code block whose columns are fixed: the widths below line up
    // (in display columns, CJK = 2) with the rows "{:>4}   {:>2}..{:<2}  {:>15.4f}   {:>15.4f}"
    {"tile   keys     m (running max)   l (running sum)", "分块   键      m（当前最大值）       l（累计和）"},
    {"the tiled result equals attention_reference's output (max diff {}), with no row of 12 scores ever held",
     "分块计算的结果与 attention_reference 的输出一致（最大差 {0}），全程从未持有一整行 12 个分数"},
    // ------------------------------------------------------------ 14.3
    {"The library's tiled kernel", "库中的分块内核"},
    {"The library's flash backend does this for every query and head, with tiles of queries and keys, "
     "masks included: FlashAttention's forward pass on the CPU. Its working memory per thread is a "
     "few tiles, whatever T is. It must agree with the reference:",
     "库的 flash 后端对每个查询、每个头都这样做，查询和键都分块，掩码也包括在内：这就是 CPU 上的 "
     "FlashAttention 前向传播。不论 T 多大，每个线程的工作内存都只有几个分块。它必须与参考实现一致："},
    {"out (flash)", "输出（flash）"},
    {"out (reference)", "输出（参考实现）"},
    {"flash equals the reference under causal + padding masks (max diff {})",
     "在因果 + 填充掩码下，flash 与参考实现一致（最大差 {0}）"},
    {"The reference materialised {} of scores for this call (and as much again for the "
     "weights); the tiled kernel never allocates a [T, T] block.",
     "这次调用中，参考实现实际存下了 {0} 的分数（权重还要再占同样多）；分块内核从不分配 [T, T] 的块。"},
    {"a training step of 4 attention blocks at T = 256: checkpointing each block keeps {:.0f}% "
     "of the activation memory of storing P, with the same gradients, at the price of one more "
     "forward pass of each block (its time: `attn experiment memory`, the median of several "
     "runs up to T = 2048)",
     "T = 256 时 4 个注意力块的一个训练步：对每个块做梯度检查点，激活内存只有存储 P 时的 {0:.0f}%，"
     "梯度完全相同，代价是每个块多做一次前向传播（它的耗时见 `attn experiment memory`：多次运行的中位数，"
     "一直测到 T = 2048）"},
    // ------------------------------------------------------------ 14.4
    {"Sparse attention: a window the kernel skips by", "稀疏注意力：内核按窗口跳过计算"},
    {"The first way past T² (C42) is to let each query see only some keys: a sliding window of the w "
     "most recent keys, a strided pattern, or a few global tokens plus a window. In attn these masks "
     "are rules on positions (Mask::sliding_window, strided, global_local), not [T, T] arrays, so the "
     "tiled kernel knows which key blocks hold no allowed key and never computes them: the work grows "
     "as T·w, not T².",
     "绕过 T² 的第一种办法（C42）是让每个查询只看到一部分键：最近 w 个键构成的滑动窗口、跨步模式，"
     "或者几个全局 token 加一个窗口。在 attn 中，这些掩码是关于位置的规则（Mask::sliding_window、strided、"
     "global_local），而不是 [T, T] 数组，所以分块内核知道哪些键块里没有允许的键，根本不去计算它们："
     "工作量按 T·w 增长，而不是 T²。"},
    {"window mask", "窗口掩码"},
    {"causal + sliding window 32", "因果 + 滑动窗口 32"},
    {"out (window, flash)", "输出（窗口，flash）"},
    {"the tiled kernel with the window rule equals the reference with the window as a dense "
     "mask (max diff {})",
     "用窗口规则的分块内核，与把窗口当作稠密掩码的参考实现一致（最大差 {0}）"},
    {"the {}-key window computes {:.1f}% of the causal score entries",
     "{0} 个键的窗口只计算因果掩码下 {1:.1f}% 的分数元素"},
    {"score entries, causal", "分数元素数，因果"},
    {"score entries, window 256", "分数元素数，窗口 256"},
    {"ratio", "比值"},
    {"`attn variants` times the kernel with these masks up to T = 65536 and finds the crossover.",
     "`attn variants` 会对使用这些掩码的内核计时，一直测到 T = 65536，并找出交叉点。"},
    // ------------------------------------------------------------ 14.5
    {"Linear attention: the same sum in another order", "线性注意力：换个顺序求同一个和"},
    {"The second way (C43) changes the function: replace exp(q·k) by a product of features φ(q)·φ(k). "
     "Then Σ_j φ(q_i)·φ(k_j) v_j = φ(q_i)ᵀ (Σ_j φ(k_j) v_jᵀ): one [m, Dv] summary S for the whole "
     "sequence, O(T) work. With φ = elu + 1 (the Linear Transformer; the source calls it an "
     "\"exponential kernel\", but elu(x) + 1 is e^x only for x ≤ 0 and 1 + x above, so φ(q)·φ(k) is not "
     "exp(q·k)): here the summary form written out, against the library's linear_attention and its "
     "explicit T² form.",
     "第二种办法（C43）改变的是函数本身：把 exp(q·k) 换成特征的乘积 φ(q)·φ(k)。于是 "
     "Σ_j φ(q_i)·φ(k_j) v_j = φ(q_i)ᵀ (Σ_j φ(k_j) v_jᵀ)：整个序列只需一个 [m, Dv] 的摘要 S，工作量为 O(T)。"
     "取 φ = elu + 1（即 Linear Transformer；原文称之为“指数核”，但 elu(x) + 1 只在 x ≤ 0 时等于 e^x，"
     "在 x 大于 0 时是 1 + x，所以 φ(q)·φ(k) 并不是 exp(q·k)）：下面把摘要形式逐步写出来，"
     "并与库中的 linear_attention 以及它显式的 T² 形式对比。"},
    {"per (batch, head): the linear form's summary", "每个（批次，头）一个：线性形式的摘要"},
    {"out (linear, library)", "输出（线性，库）"},
    {"out (linear, T²)", "输出（线性，T²）"},
    {"the same weights formed explicitly", "显式构造出同样的权重"},
    {"linear attention's O(T) form (the loop above and the library's) equals its own O(T²) form "
     "(max diff {}): the reordering is exact",
     "线性注意力的 O(T) 形式（上面的循环和库的实现）与它自己的 O(T²) 形式一致（最大差 {0}）：重排求和顺序是精确的"},
    {"the Linear Transformer's exponential kernel, and cosFormer's cosine-similarity transform",
     "Linear Transformer 的“指数核”，以及 cosFormer 的“余弦相似度转换”"},
    {"are loose names (the second article, §7.2: 指数核函数, 余弦相似度转换). The Linear "
     "Transformer's feature map is φ(x) = elu(x) + 1: e^x below 0 (φ(−1) = {:.3f}) and x + 1 "
     "above (φ({:g}) = {:g}, where e^x = {:.3f}); its kernel φ(q)·φ(k) is a dot product of "
     "features, not exp(q·k) as in softmax attention. cosFormer computes no cosine "
     "similarity: it takes ReLU features of q and k and re-weights each pair by "
     "cos(π(i − j)/2M), a term in the positions. The article never names ELU; the O(n) "
     "claim itself holds (above).",
     "这两个名字都不严谨（第二篇文章 §7.2：指数核函数、余弦相似度转换）。Linear Transformer 的特征映射是 "
     "φ(x) = elu(x) + 1：小于 0 时为 e^x（φ(−1) = {0:.3f}），其余情况为 x + 1（φ({1:g}) = {2:g}，而 e^x = "
     "{3:.3f}）；它的核 φ(q)·φ(k) 是特征的点积，不是 softmax 注意力里的 exp(q·k)。cosFormer 并不计算余弦相似度："
     "它对 q 和 k 取 ReLU 特征，再用 cos(π(i − j)/2M) 给每一对重新加权，这是一个关于位置的项。文章从未提到 ELU；"
     "O(n) 这一论断本身成立（见上）。"},
    // ------------------------------------------------------------ 14.6
    {"How far from softmax attention, and compared with what", "离 softmax 注意力有多远，又是和什么相比"},
    {"A distance between a variant's output and full attention means little alone: on random inputs "
     "the softmax rows are spread over many keys, and every output is close to the mean of the "
     "values. So next to each distance stands the distance of that trivial answer (every row the "
     "mean of v; for a causal row, the running mean of v up to it), and, where the model is present, the same measures "
     "on MiniLM's real heads.",
     "单看某个变体的输出与完整注意力之间的距离，意义不大：在随机输入上，softmax 的各行分散在许多键上，"
     "每个输出都接近值的均值。所以每个距离旁边都列出那个平凡答案（每一行都取 v 的均值；因果的行取到它为止的 v 的累计均值）的距离；"
     "模型在场时，还在 MiniLM 的真实注意力头上做同样的测量。"},
    {"variant (random q, k, v; T = 256)", "变体（随机 q、k、v；T = 256）"},
    {"distance to full (rel. L2)", "距完整注意力（相对 L2）"},
    {"the trivial answer's distance", "平凡答案的距离"},
    {"window, {} keys (causal)", "窗口，{0} 个键（因果）"},
    // the variants' names in the tables of attn experiment length
    {"window", "窗口"},
    {"elu+1", "elu+1"},
    {"favor+", "favor+"},
    {"cosformer", "cosformer"},
    {"The window does worse than its trivial answer: {:.2f} against {:.2f} for the running mean. "
     "On random inputs a causal row spreads its weight over all earlier keys, so dropping all "
     "but the last {} loses more than averaging every one evenly. A window suits text whose "
     "attention is local, not these inputs.",
     "窗口还不如它的平凡答案：{0:.2f}，而累计均值是 {1:.2f}。在随机输入上，因果的一行把权重分散在之前所有的键上，"
     "只留最后 {2} 个、丢掉其余的，比把所有键平均起来损失更大。窗口适合注意力本来就局部的文本，不适合这样的输入。"},
    {"The window beats its trivial answer: {:.2f} against {:.2f} for the running mean.",
     "窗口胜过它的平凡答案：{0:.2f}，而累计均值是 {1:.2f}。"},
    {"linear, φ = elu + 1", "线性，φ = elu + 1"},
    {"Performer FAVOR+, m = 256", "Performer FAVOR+，m = 256"},
    {"On random inputs elu + 1 lands at {:.2f} and the mean of v at {:.2f}: elu + 1 is a different, "
     "flatter kernel, not an approximation, and here it is about as far from softmax as not "
     "attending at all. FAVOR+ estimates exp(q·k/√Dk) itself and lands at {:.2f}: its variance "
     "grows as exp(|q + k|²/√Dk), large for N(0, 1) entries; `attn variants` shows its error "
     "falling as 1/√m only for smaller q and k.",
     "在随机输入上，elu + 1 的距离为 {0:.2f}，v 的均值为 {1:.2f}：elu + 1 是另一个更平坦的核，而不是近似，"
     "在这里它离 softmax 差不多和完全不做注意力一样远。FAVOR+ 估计的正是 exp(q·k/√Dk) 本身，距离为 {2:.2f}："
     "它的方差按 exp(|q + k|²/√Dk) 增长，元素服从 N(0, 1) 时很大；`attn variants` 表明，只有 q 和 k 较小时，"
     "它的误差才按 1/√m 下降。"},
    {"MiniLM q, k, v per layer", "MiniLM 每层的 q、k、v"},
    {"{} tokens of real text, [1, H, T, Dk]", "{0} 个 token 的真实文本，[1, H, T, Dk]"},
    {"variant (MiniLM, 6 layers)", "变体（MiniLM，6 层）"},
    {"pattern", "模式"},
    {"KL(variant row ‖ softmax row)", "KL(变体行 ‖ softmax 行)"},
    {"On these real heads the closest variant is {} (distance {:.2f}); none is close. BERT's "
     "heads are bidirectional and send much weight to [CLS], [SEP] and punctuation far from "
     "the query (lesson 15), which a window of {} keys cannot see: a window fits models "
     "trained with it, not a model trained with full attention.",
     "在这些真实的注意力头上，最接近的变体是 {0}（距离 {1:.2f}），但没有一个真正接近。BERT 的头是双向的，"
     "会把大量权重放在离查询很远的 [CLS]、[SEP] 和标点上（第 15 课），而 {2} 个键的窗口看不到它们："
     "窗口适合用窗口训练出来的模型，不适合用完整注意力训练出来的模型。"},
    // only without the model (attn model fetch not run)
    {"the distances on a trained model's heads: needs the model (attn model fetch)",
     "训练好的模型的注意力头上的距离：需要模型（attn model fetch）"},
    {"\"about 90% of the quality at 10× the length\" is about trained models on tasks; these "
     "distances are not task quality, and attn does not train its variants yet.",
     "“长度扩展到 10 倍时保留约 90% 的效果”说的是训练好的模型在具体任务上的表现；这些距离不是任务上的效果，"
     "而 attn 还没有训练它的变体。"},
    {"fusing scale + softmax, tensor cores and shared-memory tiles are GPU techniques; attn's "
     "CPU kernels tile for caches the same way, and a CUDA build (if present) has its own bench.",
     "融合缩放与 softmax、张量核心、共享内存分块都是 GPU 上的技术；attn 的 CPU 内核以同样的方式为缓存分块，"
     "CUDA 构建（如果有）有它自己的基准测试。"},
    // section 14.7: trained quality at 10x the length (attn experiment length, quick size)
    {"Trained quality at 10× the length (C44)", "10 倍长度下训练出的质量（C44）"},
    {"Distances to softmax on fixed inputs are not task quality: a model trained with a window or with "
     "linear attention learns weights that suit it. So the claim that these variants keep about 90% of "
     "the quality at 10× the length is measured by training: the same small model (2 layers, d_model 32) "
     "with each attention, the same budget, on next-character prediction and on associative recall, at a "
     "base length T0 and at 10 T0. Quality is a share of softmax's at the same length: for characters "
     "(L_unigram - L) / (L_unigram - L_softmax) in held-out nats, for recall (acc - chance) / "
     "(acc_softmax - chance). The tables are the quick size of attn experiment length at seed 0 (a few dozen "
     "steps: the ranking, not converged values); the verdict below asks seeds 0, 1 and 2.",
     "在固定输入上与 softmax 的距离并不等于任务质量：用窗口或线性注意力训练出的模型，会学到适合它自己的权重。"
     "所以“这些变体在 10 倍长度下保留约 90% 的质量”这一论断要靠训练来测量：同一个小模型（2 层，d_model 32）"
     "换上每种注意力，用同样的训练预算，分别做下一个字符预测和关联回忆，长度取基准 T0 和 10 T0。"
     "质量按同一长度下相对 softmax 的比例计算：字符任务为 (L_unigram - L) / (L_unigram - L_softmax)，"
     "单位是留出集上的 nat；回忆任务为 (acc - chance) / (acc_softmax - chance)。下表是 attn experiment length "
     "在种子 0 下的 quick 规模（几十步：看的是排序，不是收敛后的数值）；下面的结论问的是种子 0、1 和 2。"},
    {"attention", "注意力"},
    {"loss T0", "损失 T0"},
    {"loss 10T0", "损失 10T0"},
    {"acc T0", "准确率 T0"},
    {"acc 10T0", "准确率 10T0"},
    {"vs softmax T0", "相对 softmax T0"},
    {"vs softmax 10T0", "相对 softmax 10T0"},
    {"strided", "strided"},
    {"global+local", "global+local"},
    {"efficient attention keeps about 90% of the quality at 10x the length (next character)",
     "高效注意力在 10 倍长度下保留约 90% 的质量（下一个字符）"},
    {"efficient attention keeps about 90% of the quality at 10x the length (associative recall)",
     "高效注意力在 10 倍长度下保留约 90% 的质量（关联回忆）"},
    {"measuring: attn experiment memory at its quick size", "测量中：attn experiment memory（快速规模）"},
    // attn experiment length's readable C44 verdict (lib/experiments/src/exp_length.cpp)
    {"next-character prediction on Macbeth, each variant trained at a base length T0 and at 10 T0 with the same "
     "budget; the metric is the share of softmax's quality a variant keeps at the same length (1: as good as softmax, "
     "0: no better than letter frequencies)",
     "在《麦克白》上预测下一个字符，每种变体在基准长度 T0 和 10 T0 上以同样的预算训练；指标是变体在同一长度上保留的 softmax 质量份额（1：与 softmax 一样好，0：不比字母频率好）"},
    {"associative recall, each variant trained at a base length T0 and at 10 T0 with the same budget; the metric is "
     "the share of softmax's accuracy above chance a variant keeps at the same length (1: as good as softmax, 0: "
     "chance)",
     "关联回忆，每种变体在基准长度 T0 和 10 T0 上以同样的预算训练；指标是变体在同一长度上保留的 softmax 超出随机水平的准确率份额（1：与 softmax 一样好，0：随机水平）"},
    {"share at T0", "T0 时的份额"},
    {"share at 10 T0", "10 T0 时的份额"},
    {"keeps 85%?", "保留 85%？"},
    {"n/a", "不适用"},
    {"{} of {} efficient variants keep at least 85% of softmax's quality at 10 times the "
     "length, but softmax itself ends only {} of the way from the baseline to perfect there, "
     "so the shares are too noisy to tell; the usable length the source speaks of is not "
     "measured, only training at 10 times the length",
     "{1} 种高效变体中有 {0} 种在 10 倍长度下保留了 softmax 至少 85% 的质量，但 softmax 自己在那里从基线到满分"
     "只走了 {2}，所以这些比例噪声太大，无法判断；原文所说的“可用长度”没有测量，只测了在 10 倍长度上训练"},
    {"{} of {} efficient variants keep at least 85% of softmax's quality at 10 times the "
     "length (softmax itself {} of the way from the baseline to perfect there); the usable "
     "length the source speaks of is not measured, only training at 10 times the length",
     "{1} 种高效变体中有 {0} 种在 10 倍长度下保留了 softmax 至少 85% 的质量（softmax 自己在那里从基线到满分走了 "
     "{2}）；原文所说的“可用长度”没有测量，只测了在 10 倍长度上训练"},
    // the titles of attn experiment length's two tables (their figures are arguments)
    {"next byte of data/macbeth.txt, T0 = {} and 10 T0 = {}; {} steps, batch {}, 2 layers, d_model {}, {} "
     "heads x {}; seeds: {}. vs softmax = (L_unigram - L) / (L_unigram - L_softmax), held-out cross-entropy in "
     "nats (unigram: {} at T0, {} at 10 T0)",
     "预测 data/macbeth.txt 的下一个字节，T0 = {0}，10 T0 = {1}；{2} 步，批大小 {3}，2 层，d_model {4}，"
     "{5} 个头、每头 {6} 维；种子数：{7}。相对 softmax = (L_unigram - L) / (L_unigram - L_softmax)，"
     "其中 L 是留出集上的交叉熵（单位 nat；只看字母频率的基线：T0 时 {8}，10 T0 时 {9}）"},
    {"associative recall, 8 values, T/4 queries per row: T0 = {} ({} pairs), 10 T0 = {} ({} pairs); {} steps, "
     "batch {}, the same model; seeds: {}. vs softmax = (acc - chance) / (acc_softmax - chance), chance {}",
     "关联回忆，8 种取值，每行 T/4 个查询：T0 = {0}（{1} 个键值对），10 T0 = {2}（{3} 个键值对）；{4} 步，"
     "批大小 {5}，模型同上；种子数：{6}。相对 softmax = (acc - chance) / (acc_softmax - chance)，"
     "随机水平 chance = {7}"},
}};
}  // namespace
}  // namespace attn::lessons
