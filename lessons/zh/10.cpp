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
    // the block around the heads
    {"The block around the heads", "头周围的块"},
    {"Attention never runs alone. In a Transformer it is half of a block: the residual stream x is "
     "normalised (LayerNorm), attended over, and the result is added back to x; then normalised again, "
     "passed through a feed-forward network (two Linear layers with a GELU between them, applied to each "
     "position on its own) and added back again. After the last block a final LayerNorm and the output "
     "head turn every position into logits, one score per token of the vocabulary. Attention is the "
     "only step where positions exchange information; everything else works on one position at a time.",
     "注意力从不单独运行。在 Transformer 中它只是一个块的一半：残差流 x 先做归一化（LayerNorm），再做注意力，"
     "结果加回 x；然后再次归一化，经过一个前馈网络（两个 Linear 层，中间一个 GELU，对每个位置单独作用），"
     "再加回去。最后一个块之后，最终的 LayerNorm 和输出头把每个位置变成 logits，词表中每个 token 一个分数。"
     "注意力是位置之间交换信息的唯一一步；其余各步都一次只处理一个位置。"},
    {"training: a 1-layer decoder on reverse, 200 steps", "训练中：在 reverse 任务上训练 1 层解码器，200 步"},
    {"Below, a decoder of one block (D = {}, {} heads of Dk = {}, feed-forward width {}, vocabulary "
     "V = {}) is trained live for {} steps on `reverse`: five symbols, a separator, then the five "
     "symbols backwards. Then one held-out sequence goes through the block by hand, from the weights "
     "the trainer learned, every step with its shape:",
     "下面现场训练一个只有一个块的解码器（D = {0}，{1} 个头，每头 Dk = {2}，前馈宽度 {3}，词表 V = {4}），"
     "在 `reverse` 任务上训练 {5} 步：五个符号、一个分隔符，然后倒序输出这五个符号。接着用训练得到的权重，"
     "把一条留出的序列手工送过这个块，每一步都给出形状："},
    {"tokens", "token 序列"},
    {"[B, T] ids", "[B, T] 编号"},
    {"[V, D], one row per token", "[V, D]，每个 token 一行"},
    {"tok_emb[tokens] + pos_emb[:T]: the residual stream", "tok_emb[tokens] + pos_emb[:T]：残差流"},
    {"mean 0, variance 1 per position, then scaled and shifted", "每个位置均值 0、方差 1，再缩放和平移"},
    {"x + attn", "x + 注意力"},
    {"the first residual add", "第一次残差相加"},
    {"ffn hidden", "前馈隐层"},
    {"GELU(LN2(x)·W1ᵀ + b1): [B, T, F], each position widened on its own",
     "GELU(LN2(x)·W1ᵀ + b1)：[B, T, F]，每个位置各自变宽"},
    {"ffn out", "前馈输出"},
    {"hidden·W2ᵀ + b2: back to [B, T, D]", "隐层·W2ᵀ + b2：回到 [B, T, D]"},
    {"x + ffn", "x + 前馈"},
    {"the second residual add", "第二次残差相加"},
    {"LN_f(x)·headᵀ: [B, T, V]", "LN_f(x)·headᵀ：[B, T, V]"},
    {"both sublayers return x's shape {}, which is what lets the block add them back",
     "两个子层都返回 x 的形状 {0}，块才能把它们加回去"},
    {"the block by hand gives the model's own logits (max diff {}: float rounding, the same "
     "arithmetic in two codes)",
     "手工计算的块给出与模型自身相同的 logits（最大差 {0}：浮点舍入，两份代码做同样的运算）"},
    {"tok_emb", "tok_emb"},
    {"logits", "logits"},
    {"input      {}\ntarget     {}\npredicted  {}", "输入    {0}\n目标    {1}\n预测    {2}"},
    {"after {} steps the block reverses this held-out sequence: {} of {} positions right (the argmax "
     "of each row of logits)",
     "训练 {0} 步后，这个块把这条留出序列倒了过来：{2} 个位置中 {1} 个正确（取每行 logits 的 argmax）"},
    {"The reversal is attention's work: the feed-forward network sees one position at a time, so only "
     "the attention weights can fetch the symbol that belongs at each output position. Every lesson of "
     "this tour zooms into one step of this block.",
     "倒序是注意力完成的：前馈网络一次只看一个位置，所以只有注意力权重能把每个输出位置该有的符号取过来。"
     "本导览的每一课都放大这个块中的一步。"},
    // attn experiment heads' readable C33 verdict (lib/experiments/src/exp_heads.cpp)
    {"associative recall with 4 key-value pairs per row, which takes two attention patterns, learned by a 2-layer "
     "model whose heads share a width of 64 (1 head of 64, 4 of 16, 8 of 8); the metric is the held-out accuracy of 8 "
     "x 8 with every head learning, with 4 heads cut off from the gradient (their W_q, W_k, W_v stay at init), and "
     "with those 4 heads removed",
     "关联回忆，每行 4 个键值对，需要两种注意力模式；由一个 2 层模型学习，各头共享 64 的总宽度（1 个 64 宽的头、4 个 16 宽、8 个 8 宽）；指标是 8 × 8 模型的留出准确率：所有头都学习时、4 "
     "个头与梯度断开时（它们的 W_q、W_k、W_v 停在初始值），以及去掉这 4 个头时"},
    {"8 x 8 model", "8 × 8 模型"},
    {"final held-out accuracy", "最终留出准确率"},
    {"steps to 90%", "达到 90% 的步数"},
    {"all 8 heads learning", "8 个头都在学习"},
    {"4 heads blocked", "4 个头被阻断"},
    {"4 heads removed", "去掉 4 个头"},
    {"with 4 of the 8 heads cut off from the gradient the model still reaches {} (all 8: {}), but 4 heads alone reach "
     "{} too: the open half learns, and this task never needed the extra paths",
     "8 个头中有 4 个与梯度断开时，模型仍达到 {0}（8 个头都学习：{1}），但只有 4 个头也能达到 {2}：开放的一半在学习，而这个任务本来就不需要多出的路径"},
    {"with 4 of the 8 heads cut off from the gradient the model still reaches {} (all 8: {}), while 4 heads alone "
     "reach only {}: the other paths carry the learning",
     "8 个头中有 4 个与梯度断开时，模型仍达到 {0}（8 个头都学习：{1}），而只有 4 个头时只能达到 {2}：其余的路径承担了学习"},
    {"with 4 of the 8 heads cut off from the gradient the model reaches {}, but with every "
     "head learning only {} (4 heads alone: {}): the run is too short to tell what the "
     "blocked heads cost",
     "8 个头中有 4 个与梯度断开时，模型达到 {0}，但 8 个头都学习时也只有 {1}（只有 4 个头：{2}）：训练太短，看不出被阻断的头损失了什么"},
    {"with 4 of the 8 heads cut off from the gradient the model reaches only {} (all 8: {}; 4 heads alone: {}): the "
     "heads left open did not carry the learning",
     "8 个头中有 4 个与梯度断开时，模型只达到 {0}（8 个头都学习：{1}；只有 4 个头：{2}）：留着的那些头没有承担起学习"},
    {"with 4 of the 8 heads cut off from the gradient the model reaches {}, below all 8 learning ({}) but above 4 "
     "heads alone ({}): the other paths carry part of the learning",
     "8 个头中有 4 个与梯度断开时，模型达到 {0}，低于 8 个头都学习时（{1}），但高于只有 4 个头时（{2}）：其余的路径承担了一部分学习"},
    {"each head gets d_k/h, and each head's d_k is 64", "每个头分到 d_k/h，而每个头的 d_k 是 64"},
    {"uses one symbol for two widths (the second article, §4.1): first d_k is the whole "
     "projection, split into h parts of d_k/h, then d_k is a single head's width, 64 when "
     "d_model = 512 and h = 8. Read literally the two give d_k = {} and d_k = {}. This tour "
     "writes D (or d_model) for the whole width and Dk for one head's, so the split is "
     "Dk = D / H.",
     "用同一个符号表示两种宽度（第二篇文章 §4.1）：先是把整个投影 d_k 拆成 h 份、每份 d_k/h，接着 d_k 又成了"
     "单个头的宽度，d_model = 512、h = 8 时为 64。照字面读，两处分别得到 d_k = {0} 和 d_k = {1}。本导览用 D"
     "（或 d_model）表示整体宽度，用 Dk 表示单个头的宽度，所以拆分写作 Dk = D / H。"},
}};
}  // namespace
}  // namespace attn::lessons
