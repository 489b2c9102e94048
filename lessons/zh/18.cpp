// Chinese text of lesson 18 (lessons/18_gqa_mqa.cpp). Keys: the lesson's English
// exactly; {0}, {1}: the English template's arguments in order.
#include "catalogue.hpp"

namespace attn::lessons {
namespace {
const RegisterCatalogue zh18{Lang::zh, 18, {
    {"Fewer key/value heads than query heads", "键/值头比查询头少"},
    {"Multi-head attention gives every head its own W_q, W_k and W_v (C29). A decoder that generates "
     "text keeps every past token's K and V, for every layer and head, so K and V are what fills memory "
     "when sequences get long. Grouped-query attention (GQA) keeps all H query heads but only H_kv key/value "
     "heads: g = H / H_kv query heads share one K and one V. Multi-query attention (MQA) is the extreme "
     "H_kv = 1. Below: one layer with D = 64 and H = 8 heads of Dk = 8, run with H_kv = 8 (ordinary "
     "multi-head), 2 and 1 on the same input.",
     "多头注意力给每个头配上各自的 W_q、W_k 和 W_v（C29）。生成文本的解码器要为每一层、每一个头保留此前所有 "
     "token 的 K 和 V，所以序列一长，占满内存的正是 K 和 V。分组查询注意力（GQA）保留全部 H 个查询头，"
     "但只有 H_kv 个键/值头：每 g = H / H_kv 个查询头共用一份 K 和一份 V。多查询注意力（MQA）是 "
     "H_kv = 1 的极端情形。下面是一层注意力，D = 64，H = 8 个头，每头 Dk = 8，在同一输入上分别取 "
     "H_kv = 8（普通多头）、2 和 1 运行。"},
    {"K_heads", "K_heads"},
    {"V_heads", "V_heads"},
    {"K+V floats", "K+V 的浮点数"},
    {"of multi-head", "占多头的比例"},
    {"W_k+W_v params", "W_k+W_v 参数量"},
    {"the output has the same shape {} whatever H_kv: the layer is a drop-in replacement",
     "不论 H_kv 取多少，输出的形状都是 {0}：这一层可以直接替换多头注意力层"},
    {"K and V shrink to H_kv/H of multi-head: {} with 2 kv heads, {} with 1 (counted from the "
     "tensors)",
     "K 和 V 缩小为多头的 H_kv/H：2 个 kv 头时为 {0}，1 个时为 {1}（按张量实际元素数计）"},
    {"What sharing means: each kv head repeated g times", "共用的含义：每个 kv 头重复 g 次"},
    {"Query head h reads kv head h / g. That is exactly multi-head attention on K and V whose heads were "
     "copied g times in a row (PyTorch's scaled_dot_product_attention(..., enable_gqa=True) is defined that "
     "way). GQA never materialises the copies: the kernel just indexes the shared head.",
     "查询头 h 读取 kv 头 h / g。这恰好等于先把 K 和 V 的每个头连续复制 g 份，再做多头注意力"
     "（PyTorch 的 scaled_dot_product_attention(..., enable_gqa=True) 就是这样定义的）。"
     "GQA 从不真正生成这些副本：内核只是按索引去读共用的那个头。"},
    {"[B, H=8, T, Dv]: one output per query head, as multi-head", "[B, H=8, T, Dv]：每个查询头一个输出，与多头注意力相同"},
    {"GQA equals multi-head attention on K, V repeated 4× (max |diff| = 0: the same arithmetic)",
     "GQA 等于在重复 4× 的 K、V 上做多头注意力（最大 |diff| = 0：完全相同的运算）"},
    {"the tiled kernel, which indexes the shared head, agrees ({})",
     "按索引读取共用头的分块内核给出相同结果（{0}）"},
    {"What it saves in a decoder's cache", "解码器的缓存能省下多少"},
    {"Per token and layer the cache holds K and V: 2 · H_kv · Dk floats. For a decoder of 32 layers with "
     "32 query heads of Dk = 128 (the shape of several 7-billion-parameter models), in float16:",
     "每个 token、每一层，缓存都要存下 K 和 V：共 2 · H_kv · Dk 个浮点数。以一个 32 层、32 个查询头、"
     "Dk = 128 的解码器为例（好几个 7B 参数规模的模型都是这个形状），用 float16 存储："},
    {"bytes per token", "每 token 字节数"},
    {"cache at T = 4096", "T = 4096 时的缓存"},
    {"cache at T = 32768", "T = 32768 时的缓存"},
    {"8 kv heads need a quarter of the cache of 32 ({} vs {} per token); one needs 1/32",
     "32 个 kv 头每 token 需要 {1}，8 个只需其四分之一（{0}）；单个头只需 1/32"},
    {"The queries, the scores and the output are unchanged in size: the (T, T) score matrix per query head "
     "(C40) stays. What GQA buys is cache memory and the bandwidth of reading it at every generated token. "
     "What it costs is capacity: fewer distinct keys and values per layer. How much quality that loses is a "
     "property of trained models, which this lesson does not measure. Try it: "
     "attn forward --heads 8 --kv-heads 2 --trace shows K and V with 2 heads.",
     "查询、分数和输出的大小都不变：每个查询头的 (T, T) 分数矩阵（C40）依然存在。GQA 换来的是缓存内存，"
     "以及每生成一个 token 都要把缓存读一遍的带宽。代价是容量：每层互不相同的键和值变少了。"
     "这会让效果损失多少，是训练好的模型的性质，本课不做测量。动手试试："
     "运行 attn forward --heads 8 --kv-heads 2 --trace，可以看到 K 和 V 只有 2 个头。"},
}};
}  // namespace
}  // namespace attn::lessons
