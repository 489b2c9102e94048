// Chinese text of lesson 13 (lessons/13_debugging.cpp). Keys: the lesson's
// English exactly; {0}, {1}: the English template's arguments in order. The
// ShapeError messages the lesson prints as code stay as the library writes them.
#include "catalogue.hpp"

namespace attn::lessons {
namespace {
const RegisterCatalogue zh13{Lang::zh, 13, {
    {"Assert shapes after every transform", "每次变换之后都断言形状"},
    {"Most attention bugs are shape bugs that do not crash: a missing transpose, a forgotten head "
     "split, a mask with the wrong broadcast dimension. One line per transform that states the "
     "expected shape turns them into immediate, named errors. Here a head split was forgotten: the "
     "code passes Q as [B, T, D] where [B, H, T, Dk] was meant.",
     "注意力的错误大多是不会崩溃的形状错误：漏了一次转置，忘了拆分多头，掩码在错误的维度上广播。"
     "每次变换之后加一行声明预期的形状，就能把它们变成当场报出、指名道姓的错误。这里忘了拆分多头："
     "代码把 Q 以 [B, T, D] 的形状传了下去，而本该是 [B, H, T, Dk]。"},
    {"Q split", "拆分后的 Q"},
    {"split_heads(Q, H)", "split_heads(Q, H)"},
    {"the assertion passes on the split tensor and names the unsplit one",
     "断言对拆分后的张量放行，并指名报出未拆分的那个"},
    {"bmm refuses what matmul broadcasts", "matmul 会广播的，bmm 一律拒绝"},
    {"torch.bmm takes exactly two 3-D tensors [N, n, k] and [N, k, m]. torch.matmul accepts any "
     "ranks and broadcasts the leading ones. Broadcasting is convenient and dangerous: drop a batch "
     "dimension by accident, say K[0] instead of K, and matmul quietly gives every sequence the keys "
     "of sequence 0.",
     "torch.bmm 只接受两个三维张量 [N, n, k] 和 [N, k, m]。torch.matmul 接受任意维数，并对前面的维度做广播。"
     "广播既方便又危险：不小心丢掉了批次维度，比如把 K 写成了 K[0]，matmul 就会悄无声息地让每个序列"
     "都用上序列 0 的键。"},
    {"K[0] (the bug)", "K[0]（错误）"},
    {"broadcast over the batch: runs", "在批次维度上广播：照常运行"},
    {"matmul returns the right shape {}; batch 0 is right (diff {}), batch 1 wrong by up to {}",
     "matmul 返回的形状 {0} 是对的；批次 0 正确（差 {1}），批次 1 最多错了 {2}"},
    {"bmm refuses the 2-D operand: the rank bug surfaces at once", "bmm 拒绝二维操作数：维数错误当场暴露"},
    {"The initial weight scale", "权重的初始尺度"},
    {"When the loss does not move, the source's first suspects are a missing 1/√Dk and weights "
     "initialised too large: big W_q, W_k give big scores, softmax saturates, and lesson 4 showed "
     "what that does to the gradient. The other extreme, all-zero weights, is worse: the weights get no "
     "gradient at all, and every head computes the same thing (both measured below). Here one layer "
     "(D = 64, 4 heads of 16, B = 2, T = 10, the same x) under five initialisations:",
     "损失不动时，原文首先怀疑的是漏了 1/√Dk，以及权重初始化得过大：W_q、W_k 大，分数就大，softmax 随之饱和，"
     "而第 4 课已经展示过这对梯度意味着什么。另一个极端，即全零权重，情况更糟：权重完全得不到梯度，"
     "每个头算的都是同一个东西（两者都在下面测量）。下面是同一层（D = 64，4 个 16 维的头，B = 2，T = 10，"
     "同一个 x）在五种初始化下的情况："},
    {"init", "初始化"},
    {"heads JS", "头间 JS"},
    {"xavier_uniform", "xavier_uniform"},
    {"normal, std 1/√D = {:.3f}", "正态，标准差 1/√D = {0:.3f}"},
    {"normal, std 1/√Dk = {:.3f}", "正态，标准差 1/√Dk = {0:.3f}"},
    {"normal, std 1 (too large)", "正态，标准差 1（过大）"},
    {"zeros", "全零"},
    {"max weight: each row's largest weight, averaged over rows. entropy: the rows' mean entropy "
     "divided by log T, so 1 = uniform and 0 = one-hot. heads JS: the largest Jensen-Shannon "
     "divergence between two heads (0 = identical heads).",
     "最大权重：每行最大的权重，再对各行取平均。熵：各行的平均熵除以 log T，因此 1 = 均匀，0 = one-hot。"
     "头间 JS：两个头之间 Jensen-Shannon 散度的最大值（0 = 两个头完全相同）。"},
    {"std-1 weights give scores {:.1f}× as spread as Xavier's and near one-hot rows (mean max weight {:.3f})",
     "标准差为 1 的权重使分数的离散程度达到 Xavier 的 {0:.1f} 倍，各行接近 one-hot（平均最大权重 {1:.3f}）"},
    {"Xavier and std 1/√D keep the scaled scores near 1 (std {:.3f}, {:.3f}) and the rows soft",
     "Xavier 和标准差 1/√D 让缩放后的分数保持在 1 附近（标准差 {0:.3f}、{1:.3f}），各行保持平滑"},
    {"[B=1, T=32, D=512], entries N(0, 1)", "[B=1, T=32, D=512]，元素服从 N(0, 1)"},
    {"at d_model {}, {} heads: W std 1/√d_k = {:.3f} gives scaled scores with std {:.2f} "
     "(≈ h = {}); std 1/√d_model = {:.3f} gives {:.2f}",
     "d_model 为 {0}、{1} 个头时：W 的标准差取 1/√d_k = {2:.3f}，缩放后分数的标准差为 {3:.2f}"
     "（≈ h = {4}）；取 1/√d_model = {5:.3f} 时为 {6:.2f}"},
    {"corrected. \"Use a smaller std\" for too-large W_q, W_k is right, but "
     "\"~1/√d_k\" is the right size only when d_k is the projection's fan-in. W_q maps "
     "all d_model features, so each q entry sums d_model terms: its variance is "
     "d_model/d_k = h times too large, and so is k's, and the scaled scores' std comes "
     "out ≈ h instead of 1 ({:.2f} at d_model {}, h = {}; {:.2f} at D = {}, h = {} in "
     "the table, with mean max weight {:.3f}). The std that keeps scores near 1 is "
     "1/√d_model ({:.2f} and {:.2f}), which is what Xavier gives a square layer.",
     "更正：W_q、W_k 过大时“用更小的标准差”是对的，但“~1/√d_k”只有在 d_k 是投影的扇入（fan-in）时"
     "才是合适的大小。W_q 映射的是全部 d_model 个特征，所以 q 的每个元素是 d_model 项之和：它的方差大了 "
     "d_model/d_k = h 倍，k 也一样，于是缩放后分数的标准差约为 h 而不是 1（d_model 为 {1}、h = {2} 时为 {0:.2f}；"
     "表中 D = {4}、h = {5} 时为 {3:.2f}，平均最大权重 {6:.3f}）。能让分数保持在 1 附近的标准差是 "
     "1/√d_model（{7:.2f} 和 {8:.2f}），这正是 Xavier 给方阵层的取值。"},
    {"dout", "dout"},
    {"an arbitrary upstream gradient dL/d out", "任意一个上游梯度 dL/d out"},
    {"each [D, D]: MultiHeadAttention::backward", "各为 [D, D]：MultiHeadAttention::backward"},
    {"all-zero weights: every row uniform (max |w − 1/T| = {}) and every head identical "
     "(JS divergence 0)",
     "全零权重：每一行都是均匀的（max |w − 1/T| = {0}），每个头都完全相同（JS 散度 0）"},
    {"all-zero W_q, W_k, W_v, W_o: every weight gradient is exactly 0 (largest |entry| {}); "
     "only the output bias b_o gets one",
     "W_q、W_k、W_v、W_o 全为零：每个权重的梯度都恰好是 0（最大的 |元素| 为 {0}）；只有输出偏置 b_o 得到梯度"},
    {"zero W_q alone is harmless: its gradient reaches {} and differs between heads (by up "
     "to {})",
     "只有 W_q 为零则无害：它的梯度可达 {0}，而且各头不同（最多相差 {1}）"},
    {"That is the source's reason for \"never all zeros\": with every projection zero the output is 0 "
     "whatever x is, dout·W_o = 0 cuts the gradient to W_q, W_k and W_v, and W_o's own gradient "
     "doutᵀ·merged is 0 because merged is. Gradient descent never moves a weight. Symmetry is a second "
     "problem: heads that start identical get identical gradients and stay alike, which is why each head "
     "is drawn independently. One zero matrix among random ones is no problem: zero W_q makes the first "
     "scores uniform, but its gradient is alive and differs per head, because W_k differs per head.",
     "这就是原文说“切勿全零”的理由：所有投影都为零时，不论 x 是什么，输出都是 0；dout·W_o = 0 切断了"
     "流向 W_q、W_k 和 W_v 的梯度；W_o 自己的梯度 doutᵀ·merged 也是 0，因为 merged 是 0。梯度下降永远"
     "不会移动任何一个权重。对称性是第二个问题：起点完全相同的头得到完全相同的梯度，于是始终相像，"
     "这正是每个头要独立抽取的原因。随机矩阵里夹一个零矩阵则没有问题：W_q 为零使最初的分数是均匀的，"
     "但它的梯度是活的，而且各头不同，因为 W_k 各头不同。"},
    {"the overfit experiment's quick size reached no verdict on the overfit test; "
     "attn experiment overfit runs it in full.",
     "过拟合实验在 quick 规模下没有对过拟合测试得出结论；attn experiment overfit 会完整地运行它。"},
    // the statement of `attn experiment overfit` on C37 (its figures stay as the experiment prints them)
    {"a model that cannot memorise a few dozen examples has a broken attention",
     "记不住几十个样本的模型，其注意力实现有问题"},
    // attn experiment overfit's readable C37 verdict (lib/experiments/src/exp_overfit.cpp)
    {"memorising 32 random sequences by heart, once with a correct model and once with each known fault "
     "planted; the metric is the final loss on those sequences (near 0 when they are memorised)",
     "把 32 条随机序列背下来：一次用正确的模型，再分别植入每个已知故障各训练一次；指标是这些序列上的最终损失（背下来时接近 0）"},
    {"fault", "故障"},
    {"final loss", "最终损失"},
    {"memorised?", "背下来了？"},
    {"smoke tests", "冒烟测试"},
    {"leak seen", "发现泄漏"},
    {"no leak", "无泄漏"},
    {"none (correct model)", "无（正确的模型）"},
    {"no scaling", "不缩放"},
    {"K.Q^T instead of Q.K^T", "用 K.Q^T 代替 Q.K^T"},
    {"wrong head merge (no transpose)", "错误的合并各头（没有转置）"},
    {"inverted causal mask", "因果掩码方向反了"},
    {"masked scores filled with 0", "被遮蔽的分数填 0"},
    {"all-zero init (every Linear)", "全零初始化（每个 Linear）"},
    {"padding mask on the query side", "填充掩码加在查询一侧"},
    {"lr 100x too small (attention correct)", "学习率小了 100 倍（注意力正确）"},
    {"the correct model memorises, and so do {} of the {} planted attention bugs; with attention correct, "
     "a learning rate 100x too small stops it too. Failing to memorise says something is broken, not "
     "that attention is, and memorising clears no bug",
     "正确的模型能背下来，{1} 个植入的注意力错误中也有 {0} 个能背下来；注意力正确时，学习率小了 100 倍同样背不下来。"
     "背不下来只说明有东西坏了，并不说明坏的是注意力；背下来了也不能排除任何错误"},
    {"the correct model memorises, and so do {} of the {} planted attention bugs; a fault outside "
     "attention does not stop it, so failing points at attention",
     "正确的模型能背下来，{1} 个植入的注意力错误中也有 {0} 个能背下来；注意力之外的故障不会让它背不下来，所以背不下来指向注意力"},
    // attn experiment init's readable C36 and C9 verdicts (lib/experiments/src/exp_init.cpp)
    {"the init experiment's quick size reached no verdict on C36", "初始化实验在 quick 规模下没有对 C36 得出结论"},
    {"the init experiment's quick size reached no verdict on C9", "初始化实验在 quick 规模下没有对 C9 得出结论"},
    {"a too-large W_q, W_k init stalls training; a smaller std (~1/sqrt(d_k)) helps",
     "W_q、W_k 初始化过大会让训练停滞；较小的标准差（约 1/sqrt(d_k)）有帮助"},
    {"never initialise all-zero: nothing learns", "切勿全零初始化：什么都学不到"},
    {"associative recall learned by a 2-layer model with one head of width d_k 64, its W_q and W_k drawn "
     "with std 1 (too large) or std 1/sqrt(d_k); the metric is the steps to 95% held-out accuracy",
     "用一个 2 层、单头、宽度 d_k 64 的模型学习关联回忆，其 W_q 和 W_k 以标准差 1（过大）或 1/sqrt(d_k) 抽取；"
     "指标是留出准确率达到 95% 所需的步数"},
    {"W_q, W_k init", "W_q、W_k 初始化"},
    {"one-hot rows at step 0", "第 0 步的 one-hot 行"},
    {"std 1, adamw", "标准差 1，adamw"},
    {"std 1/sqrt(d_k), adamw", "标准差 1/sqrt(d_k)，adamw"},
    {"std 1, sgd", "标准差 1，sgd"},
    {"std 1/sqrt(d_k), sgd", "标准差 1/sqrt(d_k)，sgd"},
    {"std 1/sqrt(d_k) did not reach 95% in this run either (final {}; std 1: {}), so it is too "
     "short to tell whether the large init stalls",
     "标准差 1/sqrt(d_k) 在这次训练中也没有达到 95%（最终 {0}；标准差 1：{1}），训练太短，看不出过大的初始化是否会停滞"},
    {"std 1 makes {} of the rows one-hot at step 0 and reaches 95% in {} steps against {} with "
     "std 1/sqrt(d_k): the smaller init trains faster",
     "标准差 1 使第 0 步有 {0} 的行是 one-hot，达到 95% 用了 {1} 步，而标准差 1/sqrt(d_k) 用了 {2} 步：较小的初始化训练得更快"},
    {"std 1 reaches 95% in {} steps against {} with std 1/sqrt(d_k) ({} of its rows one-hot at "
     "step 0): the large init did not stall training here",
     "标准差 1 达到 95% 用了 {0} 步，标准差 1/sqrt(d_k) 用了 {1} 步（前者第 0 步有 {2} 的行是 one-hot）：过大的初始化在这里没有让训练停滞"},
    {"the large init is slower under one optimiser only (AdamW, steps to 95%: {} with std 1, {} "
     "with std 1/sqrt(d_k); {} of the rows one-hot at step 0)",
     "过大的初始化只在一种优化器下更慢（AdamW，达到 95% 的步数：标准差 1 为 {0}，标准差 1/sqrt(d_k) 为 {1}；第 0 步有 {2} 的行是 one-hot）"},
    {"std 1 makes {} of the rows one-hot at step 0 and never reaches 95% (final {}), while std "
     "1/sqrt(d_k) reaches it in {} steps: the smaller init trains faster",
     "标准差 1 使第 0 步有 {0} 的行是 one-hot，始终达不到 95%（最终 {1}），而标准差 1/sqrt(d_k) 用 {2} 步就达到了：较小的初始化训练得更快"},
    {"associative recall learned by the same model with some of its weights initialised to zero; the "
     "metric is the largest gradient the attention weights ever get (0: they never move) and the steps "
     "to 95% held-out accuracy",
     "用同一个模型学习关联回忆，把其中一部分权重初始化为零；指标是注意力权重得到过的最大梯度（为 0 即从未移动）"
     "和留出准确率达到 95% 所需的步数"},
    {"max |dW_qkvo|", "最大 |dW_qkvo|"},
    {"PyTorch default", "PyTorch 默认初始化"},
    {"W_q = 0", "W_q = 0"},
    {"W_q = W_k = 0", "W_q = W_k = 0"},
    {"W_q, W_k, W_v, W_o = 0", "W_q、W_k、W_v、W_o = 0"},
    {"every parameter 0", "所有参数为 0"},
    {"a zero init learned here: W_q, W_k, W_v, W_o = 0 reached {}, every parameter 0 reached {}",
     "零初始化在这里学到了东西：W_q、W_k、W_v、W_o = 0 达到 {0}，所有参数为 0 达到 {1}"},
    {"with W_q, W_k, W_v, W_o or every parameter zero no attention weight ever gets a gradient "
     "(final accuracy {} and {}); but W_q = 0 alone trains ({} steps to 95%, the default init "
     "{}): only zeros that cut every path are fatal",
     "W_q、W_k、W_v、W_o 为零或所有参数为零时，注意力权重从来得不到梯度（最终准确率 {0} 和 {1}）；"
     "但只有 W_q = 0 时照样能训练（{2} 步达到 95%，默认初始化 {3} 步）：只有切断所有路径的零才是致命的"},
    {"with W_q, W_k, W_v, W_o or every parameter zero no attention weight ever gets a gradient "
     "(final accuracy {} and {}), and W_q = 0 alone is slow too ({} steps to 95%, the default "
     "init {})",
     "W_q、W_k、W_v、W_o 为零或所有参数为零时，注意力权重从来得不到梯度（最终准确率 {0} 和 {1}），"
     "而只有 W_q = 0 时也很慢（{2} 步达到 95%，默认初始化 {3} 步）"},
}};
}  // namespace
}  // namespace attn::lessons
