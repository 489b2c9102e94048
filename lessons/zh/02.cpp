// Chinese text of lesson 2 (lessons/02_qkv.cpp). Keys: the lesson's English
// exactly; {0}, {1}: the English template's arguments in order.
#include "catalogue.hpp"

namespace attn::lessons {
namespace {
const RegisterCatalogue zh02{Lang::zh, 2, {
    {"Three projections of one x", "同一个 x 的三个投影"},
    {"In self-attention the questions, the labels and the contents all come from the same tokens. "
     "Each token's vector x is multiplied by three learned matrices: Q = x·W_qᵀ + b_q asks, "
     "K = x·W_kᵀ + b_k is asked, V = x·W_vᵀ + b_v is what gets passed along. x has shape "
     "[B, T, D]: B sequences of T tokens with D features each.",
     "在自注意力中，问题、标签和内容都来自同一组 token。每个 token 的向量 x 分别乘以三个学习得到的矩阵："
     "Q = x·W_qᵀ + b_q 负责提问，K = x·W_kᵀ + b_k 负责被查询，V = x·W_vᵀ + b_v 是被传递下去的内容。"
     "x 的形状为 [B, T, D]：B 个序列，每个序列 T 个 token，每个 token 有 D 个特征。"},
    {"[out=Dk, in=D]", "[out=Dk, in=D]"},
    {"[out=Dv, in=D]", "[out=Dv, in=D]"},
    {"Q {} and K {} end in Dk = {}, V {} in Dv = {}",
     "Q {0} 与 K {1} 的最后一维都是 Dk = {2}，V {3} 的最后一维是 Dv = {4}"},
    {"nn.Linear stores W as [out, in]", "nn.Linear 以 [out, in] 存储 W"},
    {"PyTorch's nn.Linear(in_features, out_features) keeps its weight as [out, in] and computes "
     "x·Wᵀ + b. So W_q above is [4, 8], not [8, 4], and a hand-written x·W would fail on the shapes "
     "(or, for a square W, silently use the transpose). attn's Linear follows the same convention; "
     "here is Q recomputed by hand, as x·Wᵀ + b, with a plain matrix product.",
     "PyTorch 的 nn.Linear(in_features, out_features) 把权重存成 [out, in]，计算的是 x·Wᵀ + b。"
     "所以上面的 W_q 是 [4, 8] 而不是 [8, 4]，手写的 x·W 会在形状上出错（如果 W 是方阵，则会悄悄地用错转置）。"
     "attn 的 Linear 遵循同样的约定；下面用普通的矩阵乘法按 x·Wᵀ + b 手工重算 Q。"},
    {"[in, out]", "[in, out]"},
    {"by hand", "手工计算"},
    {"W_q is [out, in] = {} and x·Wᵀ + b matches Linear.forward (max diff {})",
     "W_q 的形状是 [out, in] = {0}，x·Wᵀ + b 与 Linear.forward 一致（最大差 {1}）"},
    {"x · W_q   (forgetting the transpose)", "x · W_q   （忘了转置）"},
    {"x·W without the transpose is refused with a shape error", "不转置的 x·W 会因形状错误被拒绝"},
    {"Only Q and K must agree", "只有 Q 和 K 必须一致"},
    {"A score is a dot product of one query with one key, so Q and K need the same last dimension Dk. "
     "V is never dotted with anything: the weights only say how much of each value row to take, so "
     "Dv is free. Here Dk = 4 and Dv = 6; the output of attention has Dv columns.",
     "分数是一个查询与一个键的点积，所以 Q 和 K 的最后一维必须同为 Dk。V 从不参与点积："
     "权重只决定从每一行值里取多少，所以 Dv 可以自由选择。这里 Dk = 4，Dv = 6；注意力的输出有 Dv 列。"},
    {"Q (one head)", "Q（单头）"},
    {"Q·Kᵀ: [B, H, T, T]", "Q·Kᵀ：[B, H, T, T]"},
    {"softmax(scores / √Dk)", "softmax(分数 / √Dk)"},
    {"weights·V: [B, H, T, Dv]", "权重·V：[B, H, T, Dv]"},
    {"with Dk = {} and Dv = {} the output is {}: its width is Dv", "Dk = {0}、Dv = {1} 时输出为 {2}：宽度是 Dv"},
    {"a key projection that disagrees with Q", "与 Q 不一致的键投影"},
    {"a Dk mismatch between Q and K is refused with a shape error", "Q 与 K 的 Dk 不一致会因形状错误被拒绝"},
    {"The biases: habit, and a bit of math", "偏置：习惯，再加一点数学"},
    {"nn.Linear has a bias by default and most implementations keep it on the Q, K, V projections. "
     "One of the three is provably useless, though. K's bias adds q·b_k to every score of a query's "
     "row, the same amount for every key, and softmax ignores a constant added to a whole row. Q's "
     "bias adds b_q·k_j, which differs per key, so it does change the weights. We check both.",
     "nn.Linear 默认带偏置，多数实现在 Q、K、V 投影上都保留它。不过三者之中有一个可以证明是无用的。"
     "K 的偏置给查询那一行的每个分数都加上 q·b_k，对每个键加的量相同，而 softmax 对整行加上的常数毫无反应。"
     "Q 的偏置加上的是 b_q·k_j，随键而变，所以确实会改变权重。我们两者都检查。"},
    {"dropping b_k leaves every weight unchanged (max diff {})", "去掉 b_k 后每个权重都不变（最大差 {0}）"},
    {"dropping b_q changes the weights (max diff {})", "去掉 b_q 会改变权重（最大差 {0}）"},
    {"right for Q and V, whose biases are parameters a model may use or not (dropping b_q "
     "changed the weights by up to {}). For K the maths decides: b_k adds the same q·b_k to "
     "every score of a row, which softmax ignores, so its {} parameters are dead weight "
     "(dropping it changed the weights by {}).",
     "对 Q 和 V 成立：它们的偏置是模型可用可不用的参数（去掉 b_q，权重最多变化 {0}）。对 K 则由数学决定："
     "b_k 给一行的每个分数加上同一个 q·b_k，softmax 对此视而不见，所以它的 {1} 个参数白占位置"
     "（去掉它，权重只变化 {2}）。"},
    {"How the weights start matters too (C9: Xavier or Kaiming, never all zeros, each head drawn "
     "independently); lesson 13 measures it.",
     "权重如何初始化同样重要（C9：用 Xavier 或 Kaiming，切勿全零，每个头独立抽取）；第 13 课会测量这一点。"},
}};
}  // namespace
}  // namespace attn::lessons
