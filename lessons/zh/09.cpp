// Chinese text of lesson 9 (lessons/09_mask_smoke_test.cpp). Keys: the lesson's
// English exactly; {0}, {1}: the English template's arguments in order.
#include "catalogue.hpp"

namespace attn::lessons {
namespace {
const RegisterCatalogue zh09{Lang::zh, 9, {
    {"Print one row", "打印一行"},
    {"The cheapest test of a mask is to look at it working. Take a padded sequence, run attention, "
     "print one row of weights: the padded keys must show (about) zero, and the remaining weights "
     "must add up to 1. It takes a minute and catches a whole family of silent bugs.",
     "检验掩码最省事的办法，就是亲眼看它工作。取一条带填充的序列，跑一遍注意力，打印一行权重："
     "填充键上必须（大约）是零，其余权重之和必须为 1。这只要一分钟，却能抓住一整类不声不响的错误。"},
    {"batch 1 (length {}), query 0: {}\nweight on padding: {}\nsum over real keys: {:.7f}",
     "批次 1（长度 {0}），查询 0：{1}\n填充上的权重：{2}\n真实键上的和：{3:.7f}"},
    {"smoke test passes: padding gets {}, the real keys sum to 1 (|sum−1| = {})",
     "冒烟测试通过：填充得到 {0}，真实键之和为 1（|sum−1| = {1}）"},
    {"The same test on masks built the wrong way round", "用同一个测试检查建反了的掩码"},
    {"Mask conventions disagree. attn and PyTorch's scaled_dot_product_attention take True = may "
     "attend; nn.MultiheadAttention's key_padding_mask takes True = ignore. Hand a 'pad' mask to an "
     "API that expects a 'keep' mask and the model attends only to padding. Another classic is to "
     "mask query rows instead of key columns. Both run without an error; the loss just refuses to go "
     "down. The smoke test catches both.",
     "掩码的约定并不统一。attn 和 PyTorch 的 scaled_dot_product_attention 以 True 表示可以关注；"
     "nn.MultiheadAttention 的 key_padding_mask 却以 True 表示忽略。把一个“pad”掩码交给期待“keep”"
     "掩码的 API，模型就只关注填充。另一个经典错误是屏蔽查询行而不是键列。两者运行时都不报错，"
     "只是损失怎么也降不下去。冒烟测试两个都能抓住。"},
    {"mask", "掩码"},
    {"weight on padding", "填充上的权重"},
    {"sum over real keys", "真实键上的和"},
    {"smoke test", "冒烟测试"},
    {"right: keep = real key", "正确：keep = 真实键"},
    {"inverted: keep = padding", "反转：keep = 填充"},
    {"on query rows, not keys", "加在查询行上，而非键上"},
    {"pass", "通过"},
    {"FAIL", "失败"},
    {"right mask, batch 1", "正确的掩码，批次 1"},
    {"inverted mask, batch 1: only padding is seen", "反转的掩码，批次 1：只看得到填充"},
    {"mask on query rows, batch 1", "加在查询行上的掩码，批次 1"},
    {"the smoke test catches the inverted mask: {:.3f} of the row's weight sits on padding",
     "冒烟测试抓住了反转的掩码：该行 {0:.3f} 的权重落在填充上"},
    {"the smoke test catches a mask on query rows: {:.3f} of the weight sits on padding",
     "冒烟测试抓住了加在查询行上的掩码：{0:.3f} 的权重落在填充上"},
    {"The last picture looks almost plausible: the padded rows are empty, as if the padding had been "
     "handled. Only the weights in the padded columns give the bug away, and the smoke test reads "
     "exactly those.",
     "最后这张图看上去几乎说得过去：填充行是空的，好像填充已经处理好了。只有填充列里的权重暴露了这个错误，"
     "而冒烟测试读的恰恰是这些权重。"},
    {"Smoke test: print one row of weights; padded positions ≈ 0, the rest sums to 1",
     "冒烟测试：打印一行权重；填充位置 ≈ 0，其余之和为 1"},
    {"is sound advice, but the first article's code for it cannot run as written: it "
     "passes a key_padding_mask argument that the attention function it defines does not "
     "take; its [B, T] mask is used without unsqueeze, and [B, T] = [{}, {}] does not "
     "broadcast against [B, T, T] scores unless B = T; and it fills where mask == 0 while "
     "its mask marks padding with 1, which masks the real tokens and keeps the padding: "
     "the inverted mask of the table above, which puts {:.3f} of the row's weight on "
     "padding.",
     "是好建议，但第一篇文章为它写的代码照原样跑不起来：它传入一个 key_padding_mask 参数，"
     "而它自己定义的注意力函数并不接受这个参数；它的 [B, T] 掩码没有经过 unsqueeze 就直接使用，"
     "而除非 B = T，[B, T] = [{0}, {1}] 无法与 [B, T, T] 的分数广播；它还在 mask == 0 的位置填充，"
     "它的掩码却用 1 标记填充，结果屏蔽了真实 token、保留了填充：这正是上表中反转的掩码，"
     "它把该行 {2:.3f} 的权重放在填充上。"},
}};
}  // namespace
}  // namespace attn::lessons
