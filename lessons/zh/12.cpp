// Chinese text of lesson 12 (lessons/12_dropout.cpp). Keys: the lesson's
// English exactly; {0}, {1}: the English template's arguments in order.
#include "catalogue.hpp"

namespace attn::lessons {
namespace {
const RegisterCatalogue zh12{Lang::zh, 12, {
    {"Dropout on the weights, training mode", "对权重做 dropout：训练模式"},
    {"Attention dropout zeroes a random fraction p of the weights after softmax and multiplies the "
     "survivors by 1/(1−p), so each weight keeps its expected value. A row then no longer sums to "
     "exactly 1, but to 1 on average. Among the keys that survive, the proportions are untouched: "
     "the model still prefers what it preferred, it just cannot always see it.",
     "注意力 dropout 在 softmax 之后随机把比例为 p 的权重置零，再把保留下来的权重乘以 1/(1−p)，"
     "使每个权重的期望值保持不变。这样一行之和就不再恰好是 1，而只是平均为 1。在保留下来的键之间，"
     "比例关系丝毫不变：模型仍然偏好它原来偏好的东西，只是不一定每次都看得到。"},
    {"softmax, before dropout", "softmax 的输出，dropout 之前"},
    {"weights_dropped", "weights_dropped"},
    {"dropout(p = 0.1) applied", "施加 dropout(p = 0.1) 之后"},
    {"dropped: {} of {} weights ({:.2f}%)\nrow sums over {} rows: mean {:.4f}, min {:.4f}, max {:.4f}",
     "置零：{1} 个权重中的 {0} 个（{2:.2f}%）\n{3} 行的行和：均值 {4:.4f}，最小 {5:.4f}，最大 {6:.4f}"},
    {"the dropped fraction {:.4f} is p = {} within 4 standard errors ({})",
     "置零的比例 {0:.4f} 与 p = {1} 之差在 4 个标准误之内（{2}）"},
    {"rows sum to 1 on average ({:.4f} ± {}), not each one (range {:.3f} .. {:.3f})",
     "各行之和平均为 1（{0:.4f} ± {1}），但并非每一行都是（范围 {2:.3f} .. {3:.3f}）"},
    {"every surviving weight is exactly w/(1−p): proportions among survivors kept (max error {})",
     "每个保留下来的权重都恰好是 w/(1−p)：保留者之间的比例不变（最大误差 {0}）"},
    {"Evaluation mode: dropout off", "评估模式：关闭 dropout"},
    {"At inference dropout must be off (model.eval() in PyTorch), or the same input gives different "
     "answers each time. With train = false the dropout probability is ignored.",
     "推理时必须关闭 dropout（PyTorch 中的 model.eval()），否则同一个输入每次都会得到不同的答案。"
     "train = false 时，dropout 概率会被忽略。"},
    {"eval output equals the no-dropout output exactly (diff {}); the training output differs by up to {}",
     "评估模式的输出与不做 dropout 的输出完全相同（差 {0}）；训练模式的输出最多相差 {1}"},
    {"Dropout on the scores instead", "改为对分数做 dropout"},
    {"Dropping scores before softmax is a different operation. A dropped score becomes 0, which "
     "for a high-scoring key is a large demotion and for a low-scoring key a promotion, and then the "
     "normaliser changes, so every other weight in the row moves too. We apply the same keep/drop "
     "pattern to the scaled scores and compare the surviving keys' weights with the originals.",
     "在 softmax 之前丢弃分数是另一种运算。被丢弃的分数变成 0：对高分的键，这是大幅降级；对低分的键，"
     "反倒是提升。接着归一化因子也变了，于是这一行里其余每个权重都跟着移动。我们把同样的保留/丢弃模式"
     "施加到缩放后的分数上，再把保留下来的键的权重与原来的权重相比较。"},
    {"weights (scores dropped)", "权重（丢弃分数）"},
    {"softmax(dropout(scores))", "softmax(dropout(分数))"},
    {"dropout on", "dropout 作用于"},
    {"max relative change of a survivor", "保留者的最大相对变化"},
    {"row sums", "行和"},
    {"weights (after softmax)", "权重（softmax 之后）"},
    {"scores (before softmax)", "分数（softmax 之前）"},
    {"mean {:.4f}, {:.3f} .. {:.3f}", "均值 {0:.4f}，{1:.3f} .. {2:.3f}"},
    {"all 1 (±{})", "全为 1（±{0}）"},
    {"dropout on scores changes surviving weights by up to {:.0f}%; on weights, by {} (after 1/(1−p))",
     "对分数做 dropout，保留下来的权重最多改变 {0:.0f}%；对权重做，只改变 {1}（乘以 1/(1−p) 之后）"},
    {"The distortion is not small: in the worst row, {:.2f} of the weight mass moved between "
     "the surviving keys.",
     "这种失真并不小：在最糟的一行里，有 {0:.2f} 的权重在保留下来的键之间发生了转移。"},
    {"Trained live (`attn experiment dropout` at its quick size, seeds {}; the full size runs p = 0, "
     "0.1, 0.2, 0.3, 0.5 with AdamW and SGD): associative recall learned from a finite set of 256 rows, "
     "scored on held-out rows. Mean final held-out loss {:.3f} with p = 0, {:.3f} with p = 0.5 on the "
     "weights and {:.3f} with p = 0.5 on the scores; training loss {:.3f}, {:.3f}, {:.3f} (the gap is "
     "the memorising dropout works against). At p = 0.5 dropout on {} generalised better here.",
     "现场训练（`attn experiment dropout` 的快速规模，种子 {0}；完整规模用 AdamW 和 SGD 运行 p = 0、0.1、0.2、"
     "0.3、0.5）：关联回忆任务只从一个固定的 256 行训练集中学习，在留出的行上评分。平均最终留出集损失："
     "p = 0 时 {1:.3f}，对权重施加 p = 0.5 时 {2:.3f}，对分数施加 p = 0.5 时 {3:.3f}；训练损失依次为 "
     "{4:.3f}、{5:.3f}、{6:.3f}（两者之差就是 dropout 要对抗的死记硬背）。在 p = 0.5 时，这里对{7}施加 dropout "
     "的泛化更好。"},
    {"the scores", "分数"},
    {"the weights", "权重"},
    {"dropout on the weights rather than the scores trains better (AdamW)",
     "dropout 施加在权重上而不是分数上，训练效果更好（AdamW）"},
    {"p above 0.2 slows training (AdamW, p = 0.5 against p = 0)", "p 超过 0.2 会拖慢训练（AdamW，p = 0.5 对比 p = 0）"},
    {"{}: {} on all {} training seeds (`attn experiment dropout` reruns it)",
     "{0}：全部 {2} 个训练种子都是“{1}”（`attn experiment dropout` 可重跑）"},
    {"{}: the {} training seeds disagree (`attn experiment dropout --seeds 5` trains more)",
     "{0}：{1} 个训练种子的结论不一致（`attn experiment dropout --seeds 5` 会训练更多种子）"},
}};
}  // namespace
}  // namespace attn::lessons
