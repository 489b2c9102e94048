// Chinese text of lesson 21 (lessons/21_kv_cache.cpp). Keys: the lesson's English
// exactly; {0}, {1}: the English template's arguments in order.
#include "catalogue.hpp"

namespace attn::lessons {
namespace {
const RegisterCatalogue zh21{Lang::zh, 21, {
    {"Row t of a causal layer reads tokens 0..t only", "因果层的第 t 行只读取 token 0..t"},
    {"A decoder writes text one token at a time: to choose token t+1 it runs on tokens 0..t. Run the "
     "whole prefix again at every step and the work grows with the square of the length, most of it "
     "repeated. The causal mask (lesson 8) says why it need not be: query t sees keys j ≤ t only, and "
     "in the first layer key j = x_j·W_kᵀ + b_k depends on token j alone; in a later layer it depends on "
     "tokens 0..j, through the causal attention below it, and on nothing after j (values likewise). "
     "So when token t arrives, the keys "
     "and values of tokens 0..t-1 are exactly what they were at the previous step. Keep them — the KV "
     "cache — and each step computes one query, one key and one value per layer and head, appends the "
     "key and value, and attends over the cache. No mask is needed: the cache holds exactly the keys "
     "query t may see.",
     "解码器一次写一个 token：为了选出 token t+1，它要在 token 0..t 上运行一遍。如果每一步都把整个前缀重算一遍，"
     "工作量就随长度的平方增长，而且大部分是重复劳动。因果掩码（第 8 课）说明了为什么不必如此：查询 t "
     "只看得到 j ≤ t 的键，在第一层，键 j = x_j·W_kᵀ + b_k 只取决于 token j 本身；在后面的层里，它经由下面各层的因果注意力取决于 "
     "token 0..j，而与 j 之后的一切无关（值也一样）。所以 token t 到来时，"
     "token 0..t-1 的键和值与上一步时完全相同。把它们存下来，这就是 KV 缓存。于是每一步只需为每层、"
     "每个头计算一个查询、一个键和一个值，把键和值追加到缓存里，再在缓存上做注意力。不需要掩码："
     "缓存里恰好是查询 t 可以看到的那些键。"},
    {"step t", "第 t 步"},
    {"K cache per layer", "每层的 K 缓存"},
    {"V cache per layer", "每层的 V 缓存"},
    {"cache bytes", "缓存字节数"},
    {"max |step − full|", "最大 |逐步 − 整段|"},
    {"[B, T, D]: T token vectors", "[B, T, D]：T 个 token 向量"},
    {"one token per step", "每步一个 token"},
    {"every step, in both layers, equals row t of the full causal pass (max |diff| {} for values "
     "up to {})",
     "每一步在两层中都等于整段因果计算的第 t 行（最大 |diff| 为 {0}，数值最大为 {1}）"},
    {"The check can fail", "这项检查可能失败"},
    {"Equality is not automatic. Skip one token — decode token 0, then token 2, as a cache that lost "
     "a row would — and token 2's output is that of another sequence.",
     "相等并不是自动成立的。跳过一个 token，即先解码 token 0，再解码 token 2，就像缓存丢了一行那样，"
     "token 2 的输出就成了另一个序列的输出。"},
    {"with token 1's key and value missing, token 2 moves by {}",
     "缺了 token 1 的键和值，token 2 变化 {0}"},
    {"What the cache saves", "缓存省下了什么"},
    {"Count the attention work (score and weighted-sum multiply-adds, attention_flops) of producing T "
     "tokens. Without a cache, step t reruns the causal pass over t+1 tokens; with it, step t is one "
     "query over t+1 keys. (The projections save the same way: one token instead of t+1.)",
     "统计生成 T 个 token 所需的注意力工作量（分数和加权求和的乘加次数，attention_flops）。没有缓存时，"
     "第 t 步要在 t+1 个 token 上重跑一遍因果计算；有缓存时，第 t 步只是一个查询对 t+1 个键。"
     "（投影也同样节省：只算一个 token，而不是 t+1 个。）"},
    {"no cache (FLOPs)", "无缓存（FLOPs）"},
    {"with cache (FLOPs)", "有缓存（FLOPs）"},
    {"the saving grows with T: {}x at T = 16, {}x at T = 1024",
     "节省随 T 增长：T = 16 时为 {0} 倍，T = 1024 时为 {1} 倍"},
    {"What it costs: memory", "代价：内存"},
    {"The cache keeps, per layer, K [B, H_kv, T, Dk] and V [B, H_kv, T, Dv]: bytes = layers × B × "
     "H_kv × T × (Dk + Dv) × bytes per value, growing linearly with every token of every sequence. "
     "Multi-head attention has H_kv = H. Grouped-query attention lets g query heads share one key/value "
     "head (H_kv = H / g), multi-query attention keeps a single one (H_kv = 1): the same output shapes "
     "for a fraction of the cache.",
     "缓存每层保存 K [B, H_kv, T, Dk] 和 V [B, H_kv, T, Dv]：字节数 = 层数 × B × H_kv × T × (Dk + Dv) "
     "× 每个值的字节数，随每个序列的 token 数线性增长。多头注意力的 H_kv = H。分组查询注意力让 "
     "g 个查询头共用一个键/值头（H_kv = H / g），多查询注意力只保留一个（H_kv = 1）：输出形状不变，"
     "缓存只需原来的一部分。"},
    {"this lesson's cache after {} tokens: {} = {} × {} × {} × {} × ({} + {}) × 4",
     "本课的缓存在 {0} 个 token 之后：{1} = {2} × {3} × {4} × {5} × ({6} + {7}) × 4"},
    {"For a decoder of 32 layers, 32 heads of 128 dims, float16, one sequence:",
     "以一个 32 层、32 个 128 维的头的解码器为例，float16，单个序列："},
    {"H_kv = 32 (MHA)", "H_kv = 32（MHA）"},
    {"H_kv = 8 (GQA, g = 4)", "H_kv = 8（GQA，g = 4）"},
    {"H_kv = 1 (MQA)", "H_kv = 1（MQA）"},
    {"at T = 4096: {} with 32 K/V heads, {} with 8 (a quarter)",
     "T = 4096 时：32 个 K/V 头需要 {0}，8 个只需 {1}（四分之一）"},
}};
}  // namespace
}  // namespace attn::lessons
