// Chinese text of lesson 10 (lessons/10_multi_head.cpp). Keys: the lesson's
// English exactly; {0}, {1}: the English template's arguments in order.
#include "catalogue.hpp"

namespace attn::lessons {
namespace {
const RegisterCatalogue zh10{Lang::zh, 10, {
    {"Split d_model into heads", "把 d_model 拆分成多个头"},
    {"One head gives each query one distribution over the keys. Multi-head attention runs several "
     "smaller heads side by side, each with its own projections, so a query can look for several "
     "things at once. The usual bookkeeping keeps the total width: d_model = 512 becomes 8 heads of "
     "64. Q is still computed by one [512, 512] projection; its 512 output columns are then cut into "
     "8 slices of 64, one per head. After attention the heads are concatenated back to 512 and a "
     "last projection W_o mixes them.",
     "一个头给每个查询一个在键上的分布。多头注意力并排运行几个更小的头，每个头有自己的投影，"
     "于是一个查询可以同时寻找几样东西。通常的记账方式保持总宽度不变：d_model = 512 变成 8 个 64 维的头。"
     "Q 仍然由一个 [512, 512] 投影算出；它的 512 个输出列再被切成 8 段，每段 64 列，每个头一段。"
     "注意力算完后，各头拼接回 512 维，最后由投影 W_o 把它们混合起来。"},
    {"d_model = {}, heads = {}, so Dk = Dv = {}. The forward pass reports each step:",
     "d_model = {0}，heads = {1}，所以 Dk = Dv = {2}。前向传播报告每一步："},
    // the steps MultiHeadAttention::forward reports (lib/nn/src/mha.cpp)
    {"input", "输入"},
    {"Q_heads", "Q_heads"},
    {"K_heads", "K_heads"},
    {"V_heads", "V_heads"},
    {"Q.view(B, T, H, Dk).transpose(1, 2)", "Q.view(B, T, H, Dk).transpose(1, 2)"},
    {"K.view(B, T, H, Dk).transpose(1, 2)", "K.view(B, T, H, Dk).transpose(1, 2)"},
    {"V.view(B, T, H, Dv).transpose(1, 2)", "V.view(B, T, H, Dv).transpose(1, 2)"},
    {"scaled", "缩放后"},
    {"scores · scale (+ additive mask)", "分数 · scale（+ 加性掩码）"},
    {"masked", "加掩码后"},
    {"masked_fill(~mask, fill)", "masked_fill(~mask, fill)"},
    {"softmax(masked, dim=-1)", "softmax(加掩码后, dim=-1)"},
    {"head_out", "head_out"},
    {"head_out.transpose(1, 2).reshape(B, T, H·Dv)", "head_out.transpose(1, 2).reshape(B, T, H·Dv)"},
    {"merged·W_oᵀ + b_o", "合并后·W_oᵀ + b_o"},
    {"{} = {} × {}; per-head Q is {}, the output {} has x's shape",
     "{0} = {1} × {2}；每个头的 Q 是 {3}，输出 {4} 与 x 形状相同"},
    {"8 heads of 64 cost what 1 head of 512 costs", "8 个 64 维的头，代价与 1 个 512 维的头相同"},
    {"Splitting does not add parameters or arithmetic: the projections are the same four [512, 512] "
     "matrices, and the score products Q·Kᵀ and weights·V do H × Dk = 512 multiply-adds per (query, "
     "key) pair either way. What does grow is the score matrix: one [T, T] per head.",
     "拆分既不增加参数，也不增加运算：投影还是那四个 [512, 512] 矩阵，而分数乘积 Q·Kᵀ 和权重·V "
     "无论哪种布局，每个（查询, 键）对都做 H × Dk = 512 次乘加。真正增长的是分数矩阵：每个头一个 [T, T]。"},
    {"layout", "布局"},
    {"parameters", "参数量"},
    {"proj. FLOPs", "投影 FLOPs"},
    {"QKᵀ + wV FLOPs", "QKᵀ + wV FLOPs"},
    {"total FLOPs", "总 FLOPs"},
    {"scores", "分数"},
    {"1 head × 512", "1 个头 × 512"},
    {"8 heads × 64", "8 个头 × 64"},
    // the score matrices' sizes (format_bytes): units, not words
    {"64.0 KiB", "64.0 KiB"},
    {"512.0 KiB", "512.0 KiB"},
    {"For B = 1, T = {} (a FLOP is a multiply or an add):", "B = 1，T = {0} 时（一次 FLOP 指一次乘法或一次加法）："},
    {"same parameters ({}) and same FLOPs ({}) for both layouts",
     "两种布局的参数量（{0}）和 FLOPs（{1}）都相同"},
    {"but 8 heads keep 8 score matrices: {} instead of {}", "但 8 个头要保存 8 个分数矩阵：{0}，而不是 {1}"},
    {"attention_cost's parameter count matches the layer's own tensors",
     "attention_cost 算出的参数量与该层自身的张量一致"},
    {"Split d_model into h heads (512 = 8 × 64)", "把 d_model 拆成 h 个头（512 = 8 × 64）"},
    {"is right, but the first article's table of the split gives the score matrices as "
     "[seq, 512, 512] for one head and 8 × [seq, 64, 64] for eight, as if scores "
     "were [Dk, Dk]. Scores compare queries with keys, so they are [T, T] in both "
     "layouts: the 512-wide layer above made scores of shape {} ([B, H, T, T] with "
     "T = {}), and Dk never appears in their shape.",
     "是对的，但第一篇文章里关于拆分的表格把分数矩阵写成单头 [seq, 512, 512]、8 头 8 × [seq, 64, 64]，"
     "仿佛分数是 [Dk, Dk]。分数比较的是查询和键，所以两种布局下都是 [T, T]：上面 512 宽的层算出的分数"
     "形状为 {0}（[B, H, T, T]，T = {1}），Dk 从不出现在分数的形状里。"},
    {"Merging heads: transpose before reshape", "合并各头：先 transpose，再 reshape"},
    {"Heads come out as [B, H, T, Dv]. To concatenate them per token we need [B, T, H·Dv]: first "
     "swap H and T ([B, T, H, Dv]), then flatten the last two. Reshaping [B, H, T, Dv] straight to "
     "[B, T, H·Dv] has the right shape and the wrong contents: it glues together consecutive tokens "
     "of one head. (In PyTorch the transpose makes a non-contiguous view, hence the .contiguous() "
     "before .view(); attn's tensors are always contiguous copies.) A tiny example makes it visible: "
     "2 heads, 3 tokens, Dv = 2, each entry labelled h·100 + t·10 + d.",
     "各头输出的形状是 [B, H, T, Dv]。要按 token 把它们拼接起来，需要 [B, T, H·Dv]：先交换 H 和 T"
     "（[B, T, H, Dv]），再把最后两维展平。把 [B, H, T, Dv] 直接 reshape 成 [B, T, H·Dv]，形状是对的，"
     "内容却是错的：它把同一个头里相邻的 token 粘在了一起。（在 PyTorch 中，转置得到的是非连续的视图，"
     "所以 .view() 之前要先 .contiguous()；attn 的张量总是连续的副本。）一个很小的例子就能看清："
     "2 个头，3 个 token，Dv = 2，每个元素标为 h·100 + t·10 + d。"},
    {"heads", "头"},
    {"merged", "合并后"},
    {"transpose(1, 2), then reshape", "先 transpose(1, 2)，再 reshape"},
    {"merged_wrong", "错误合并"},
    {"reshape only", "仅 reshape"},
    {"token   right merge            reshape only", "token   正确合并               仅 reshape"},
    {"the right merge keeps each row to one token (tens digit = t); reshape alone mixes tokens in a row",
     "正确的合并让每一行只含一个 token（十位数字 = t）；只做 reshape 会在一行里混进不同的 token"},
    {"split_heads undoes merge_heads exactly on the real layer (max diff {})",
     "在真实的层上，split_heads 精确地还原了 merge_heads（最大差 {0}）"},
    {"out, wrong", "输出，错误合并"},
    {"merge_heads_wrong, then W_o", "merge_heads_wrong，再乘 W_o"},
    {"on the 512-wide layer, the wrong merge changes the output by up to {} (same shape {}, no error)",
     "在 512 宽的层上，错误的合并使输出最多改变 {0}（形状同为 {1}，不报错）"},
    {"the source adds that several heads give the gradient several paths, so some heads "
     "keep learning when others' gradients vanish. That is a statement about training, "
     "measured by attn experiment heads (half the heads behind a stop-gradient).",
     "原文还说，多个头为梯度提供了多条路径，所以当一些头的梯度消失时，另一些头仍能继续学习。"
     "这是关于训练的论断，由 attn experiment heads 测量（让一半的头处在 stop-gradient 之后）。"},
    // the experiment's verdict (lib/experiments/src/exp_heads.cpp)
    {"several heads give the gradient several paths: if some heads' gradients vanish, the others still learn",
     "多个头为梯度提供了多条路径：一些头的梯度消失时，其余的头仍能学习"},
    {"several heads give the gradient several paths: if some heads' gradients vanish, the others still learn (adamw)",
     "多个头为梯度提供了多条路径：一些头的梯度消失时，其余的头仍能学习（adamw）"},
}};
}  // namespace
}  // namespace attn::lessons
