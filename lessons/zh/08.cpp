// Chinese text of lesson 8 (lessons/08_masks.cpp). Keys: the lesson's English
// exactly; {0}, {1}: the English template's arguments in order.
#include "catalogue.hpp"

namespace attn::lessons {
namespace {
const RegisterCatalogue zh08{Lang::zh, 8, {
    {"Key padding: [B, 1, 1, T] broadcast over heads and queries", "键填充掩码：[B, 1, 1, T] 在所有头和查询上广播"},
    {"Sequences in a batch have different lengths, so the short ones are padded to T. Padding tokens "
     "are not words: no query may take information from them. The key-padding mask has one entry per "
     "key, shape [B, 1, 1, T] against scores [B, H, T, T] (1 = real token); its two 1s broadcast it "
     "over the H heads and the T queries, so the same columns are masked in every row of every head. "
     "(A single head's scores are [B, T, T], and there [B, 1, T] is the shape.) Our batch: lengths 5 "
     "and 3, T = 5.",
     "一个批次里的序列长短不一，所以短的要填充到 T。填充 token 不是词：任何查询都不能从它们那里取信息。"
     "键填充掩码每个键一个元素，对形状为 [B, H, T, T] 的分数，它的形状是 [B, 1, 1, T]（1 = 真实 token）；"
     "那两个 1 让它在 H 个头和 T 个查询上广播，所以每个头的每一行屏蔽的都是同样的列。"
     "（单头的分数是 [B, T, T]，那时形状是 [B, 1, T]。）我们的批次：长度分别为 5 和 3，T = 5。"},
    {"[B=2, H=1, T=5, Dk=8], random", "[B=2, H=1, T=5, Dk=8]，随机"},
    {"key mask [B, 1, 1, T]:", "键掩码 [B, 1, 1, T]："},
    {"the padding mask broadcasts as [batch, 1, seq]", "填充掩码以 [batch, 1, seq] 的形状广播"},
    {"fits the single head of the first article's mask section, whose scores are [B, T, T] "
     "(its code: key_padding_mask.unsqueeze(1)). The same article's multi-head code applies "
     "its mask to scores [B, H, T, T], and there a [B, 1, T] mask lines up from the right as "
     "[1, B, 1, T]: its batch axis falls on the heads. With B = {} and H = 8 the shapes "
     "refuse to broadcast; with B = H they broadcast and mask the wrong heads. Multi-head "
     "attention needs [B, 1, 1, T].",
     "适用于第一篇文章掩码一节里的单头，那里的分数是 [B, T, T]（其代码：key_padding_mask.unsqueeze(1)）。"
     "同一篇文章的多头代码把掩码用在 [B, H, T, T] 的分数上，这时 [B, 1, T] 的掩码从右往左对齐成 [1, B, 1, T]："
     "它的批次轴落在了头的轴上。B = {0}、H = 8 时两者无法广播；B = H 时能广播，却屏蔽了错误的头。"
     "多头注意力需要 [B, 1, 1, T]。"},
    {"batch {}:", "批次 {0}:"},
    {"broadcast to [B, H, T, T] for batch 1 (row = query):", "批次 1 广播成 [B, H, T, T]（行 = 查询）："},
    {"key mask", "键掩码"},
    {"key padding (lengths 5,3)", "键填充（长度 5,3）"},
    {"causal + key padding (lengths 5,3)", "因果 + 键填充（长度 5,3）"},
    {"weights", "权重"},
    {"key padding, batch 1 (length 3)", "键填充，批次 1（长度 3）"},
    {"every padded key gets weight exactly 0 (largest: {})", "每个填充键的权重都恰好为 0（最大值：{0}）"},
    {"every row still sums to 1 over the real keys (max |sum−1| = {})",
     "每一行在真实键上的和仍为 1（最大 |sum−1| = {0}）"},
    {"Causal: no peeking at the future", "因果掩码：不许偷看未来"},
    {"A decoder that predicts token i+1 must not see tokens after i while it does. The causal mask "
     "lets query i see keys j ≤ i: everything above the diagonal is masked (torch.triu(ones, "
     "diagonal=1) marks exactly those cells).",
     "解码器在预测 token i+1 时，不能看到 i 之后的 token。因果掩码只让查询 i 看到 j ≤ i 的键："
     "对角线以上的全部被屏蔽（torch.triu(ones, diagonal=1) 标出的正是这些格子）。"},
    {"causal, batch 0", "因果掩码，批次 0"},
    {"every weight above the diagonal is exactly 0 (largest: {})", "对角线以上的每个权重都恰好为 0（最大值：{0}）"},
    {"the first query sees only itself: weight {}", "第一个查询只看得到自己：权重 {0}"},
    {"Both at once", "两者同时使用"},
    {"A decoder batch needs both: a key is visible if it is in the past and it is real. The masks "
     "combine by AND.",
     "解码器的批次两者都需要：一个键只有既在过去、又是真实 token 时才可见。两个掩码按 AND 组合。"},
    {"combined mask", "组合掩码"},
    {"causal + padding, batch 1", "因果 + 填充，批次 1"},
    {"no weight on a future or padded key ({}), rows sum to 1 (max |sum−1| = {})",
     "未来的键和填充键上都没有权重（{0}），各行之和为 1（最大 |sum−1| = {1}）"},
    {"Mask before softmax, not after", "在 softmax 之前加掩码，而不是之后"},
    {"The mask belongs on the scores, as −inf, before softmax: exp(−inf) = 0, so masked keys get "
     "nothing and the visible keys share the whole unit of weight. A tempting shortcut is to run "
     "softmax on everything and zero the padded weights afterwards. The padded keys' share then "
     "simply disappears and the rows no longer sum to 1. Here is batch 1, row by row:",
     "掩码应当在 softmax 之前以 −inf 的形式加到分数上：exp(−inf) = 0，所以被屏蔽的键什么也得不到，"
     "可见的键分享全部的一份权重。一个诱人的捷径是先对所有位置做 softmax，事后再把填充位置的权重置零。"
     "这样填充键的那一份就凭空消失了，各行之和不再是 1。下面是批次 1，逐行列出："},
    {"no mask: softmax over all keys", "无掩码：在所有键上做 softmax"},
    {"zeroed after", "事后置零"},
    {"padded columns set to 0 afterwards", "填充列事后设为 0"},
    {"query", "查询"},
    {"row sum: −inf before softmax", "行和：softmax 前填 −inf"},
    {"row sum: zeroed after softmax", "行和：softmax 后置零"},
    {"tea", "tea"},
    {"hot", "hot"},
    {"<pad>", "<pad>"},
    {"−inf before softmax: max |sum−1| = {}; zeroing after: max |sum−1| = {}",
     "softmax 前填 −inf：最大 |sum−1| = {0}；softmax 后置零：最大 |sum−1| = {1}"},
    {"renormalised", "重新归一化"},
    {"each row divided by its sum", "每行除以它的和"},
    {"zeroing after softmax and then renormalising each row gives the masked weights back (max diff {})",
     "softmax 后置零、再把每行重新归一化，就得回加掩码的权重（最大差 {0}）"},
    {"So masking after softmax is wrong by exactly the missing normalisation; −inf before softmax "
     "gets it for free.",
     "所以在 softmax 之后加掩码，错就错在少了那一步归一化；在 softmax 之前填 −inf，这一步自然就有了。"},
    {"What to fill with: 0, −1e9 or −inf", "填什么：0、−1e9 还是 −inf"},
    {"masked_fill needs a value. 0 is a classic bug: a score of 0 is an ordinary score, so padded "
     "keys get a normal-sized weight. −1e9 and −inf both send exp() to 0 and agree on any row that "
     "has a visible key.",
     "masked_fill 需要一个填充值。填 0 是经典错误：分数 0 只是一个普通的分数，所以填充键会得到正常大小的权重。"
     "−1e9 和 −inf 都让 exp() 变成 0，在任何有可见键的行上结果都一致。"},
    {"fill", "填充值"},
    {"largest weight on a padded key", "填充键上的最大权重"},
    {"max |row sum − 1|", "最大 |行和 − 1|"},
    {"-inf", "-inf"},
    {"fill 0 leaks: a padded key gets weight up to {}", "填 0 会泄漏：填充键的权重最高可达 {0}"},
    {"fill −1e9 and −inf give identical weights here (max diff {})",
     "这里填 −1e9 和填 −inf 得到完全相同的权重（最大差 {0}）"},
    {"−1e9 is safe in float32 (largest finite {:.3g}) and bfloat16 (same exponent range), but "
     "not in float16, whose largest finite value is {:g}: any number at or beyond {:g} rounds "
     "to infinity. PyTorch's masked_fill of −1e9 on a float16 tensor refuses the value (an overflow "
     "error), but the same −1e9 reaching float16 through a cast or arithmetic, as an additive "
     "mask does, becomes −inf, and then the \"safe\" fill "
     "behaves exactly like −inf, empty rows included. The portable fills are −inf itself (with "
     "a rule for empty rows, below) or the score dtype's own minimum, torch.finfo(dtype).min "
     "(−{:g} in float16).",
     "−1e9 在 float32（最大有限值 {0:.3g}）和 bfloat16（指数范围相同）中是安全的，在 float16 中却不是："
     "float16 的最大有限值是 {1:g}，任何达到或超过 {2:g} 的数都会舍入为无穷大。PyTorch 对 float16 张量做 masked_fill(−1e9) 会拒绝这个值"
     "（报溢出错误）；但同样的 −1e9 经过类型转换或算术进入 float16（加性掩码就是这样）就成了 −inf，"
     "这时这个“安全”的填充值表现得与 −inf 完全一样，空行也不例外。可移植的填充值是 −inf 本身"
     "（再为空行定一条规则，见下文），或者分数 dtype 自己的最小值 torch.finfo(dtype).min"
     "（float16 中为 −{3:g}）。"},
    {"1e9 is {} times float16's overflow threshold {:g}, and far inside float32's range",
     "1e9 是 float16 溢出阈值 {1:g} 的 {0} 倍，却远在 float32 的范围之内"},
    {"A row with nothing to see", "什么都看不到的行"},
    {"They differ when a row has no visible key at all, say a sequence of length 0. With −1e9 every "
     "score is −1e9, softmax sees a row of equal scores and returns the uniform 1/T, padding "
     "included (PyTorch does the same). With −inf softmax is 0/0; PyTorch returns NaN, which then "
     "spreads through everything it touches. attn defines such a row as all zeros, so its output is "
     "0.",
     "当一行完全没有可见的键时（比如长度为 0 的序列），两者就不同了。填 −1e9 时每个分数都是 −1e9，"
     "softmax 看到一行相等的分数，返回均匀的 1/T，填充位置也算在内（PyTorch 也是如此）。填 −inf 时 "
     "softmax 成了 0/0；PyTorch 返回 NaN，NaN 随后会扩散到它碰到的一切。attn 把这样的行定义为全零，"
     "所以它的输出是 0。"},
    {"lengths [5, 0], batch 1, query 0:\n  fill −1e9: {}\n  fill −inf: {}",
     "长度 [5, 0]，批次 1，查询 0：\n  填 −1e9：{0}\n  填 −inf：{1}"},
    {"−1e9: the empty row is uniform, 1/T on every key (max deviation {})",
     "−1e9：空行是均匀的，每个键上都是 1/T（最大偏差 {0}）"},
    {"−inf: the empty row is all zeros and so is its output (no NaN)", "−inf：空行全为零，它的输出也是（没有 NaN）"},
    {"Padded query rows do not matter", "填充位置的查询行无关紧要"},
    {"The mask is on keys (columns). Rows of padded queries still get ordinary-looking weights over "
     "the real keys: look at rows <pad> in the first heatmap. That is fine, because nothing reads "
     "them: the loss ignores padded positions, and no real query can see a padded key. The check: "
     "change everything about the padded tokens of batch 1 (their q, k and v); the real rows' "
     "outputs do not move, only the padded rows' do.",
     "掩码作用在键（列）上。填充位置的查询行在真实键上仍然得到看起来很普通的权重：看第一张热力图里 <pad> "
     "的那几行。这没有问题，因为没有谁会读它们：损失会忽略填充位置，真实的查询也看不到填充键。"
     "检验方法：把批次 1 中填充 token 的一切（它们的 q、k 和 v）都改掉；真实行的输出纹丝不动，"
     "只有填充行的输出会变。"},
    {"padded tokens of batch 1 changed", "批次 1 的填充 token 已改动"},
    {"out, out'", "输出、输出'"},
    {"before and after the change", "改动前和改动后"},
    {"real rows change by {}, padded rows by {}: the padding only affects rows nobody uses",
     "真实行变化 {0}，填充行变化 {1}：填充只影响没人用的行"},
    {"Forgetting the look-ahead mask", "忘了前瞻掩码"},
    {"The first bug on the source's list: a decoder without the causal mask. Every position can then "
     "read the tokens it is supposed to predict. Change only the last token's value and watch the "
     "first position's output.",
     "原文列出的第一个错误：解码器没有用因果掩码。这样每个位置都能读到它本该预测的 token。"
     "只改最后一个 token 的值，看第一个位置的输出。"},
    {"last token's value + 1", "最后一个 token 的值 + 1"},
    {"out ×4", "输出 ×4"},
    {"no mask / causal, with v and with v'", "无掩码 / 因果掩码，分别用 v 和 v'"},
    {"without the mask position 0 moves by {} when token {} changes; with it, by {}",
     "没有掩码时，token {1} 一变，位置 0 就变化 {0}；有掩码时变化 {2}"},
}};
}  // namespace
}  // namespace attn::lessons
