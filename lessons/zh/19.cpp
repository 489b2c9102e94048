// Chinese text of lesson 19 (lessons/19_rope_alibi.cpp). Keys: the lesson's English
// exactly; {0}, {1}: the English template's arguments in order.
#include "catalogue.hpp"

namespace attn::lessons {
namespace {
const RegisterCatalogue zh19{Lang::zh, 19, {
    {"Attention alone does not know the order", "注意力本身不知道顺序"},
    {"Every query scores every key directly, whatever their distance (C4). The flip side: nothing in "
     "softmax(Q·Kᵀ/√Dk)·V says where a key is. Shuffle the keys together with their values and each "
     "query's output is the same weighted mean, summed in another order.",
     "每个查询都直接给每个键打分，不论两者相距多远（C4）。反过来说：softmax(Q·Kᵀ/√Dk)·V 里没有任何东西"
     "表明一个键在哪个位置。把键连同各自的值一起打乱，每个查询的输出仍是同一个加权平均，只是求和的顺序变了。"},
    {"keys and values shuffled: the output moves by {} (float32 summation order only)",
     "打乱键和值：输出只变化了 {0}（仅来自 float32 求和顺序）"},
    {"So order has to be put in. The original Transformer adds a position vector p_t to each token's x "
     "before the projections. RoPE and ALiBi put it into the score itself.",
     "所以顺序必须另外加进去。最初的 Transformer 在投影之前给每个 token 的 x 加上一个位置向量 p_t。"
     "RoPE 和 ALiBi 则把位置直接放进分数里。"},
    {"Absolute positions: the score depends on i and j", "绝对位置：分数取决于 i 和 j"},
    {"One query vector q and one key vector k, with the sinusoidal p_i added to q at position i and p_j "
     "to k at position j (no projections, to see the effect alone): (q + p_i)·(k + p_j) = q·k + q·p_j + "
     "p_i·k + p_i·p_j. The cross terms depend on i and j separately, so the same distance i − j scores "
     "differently at different places.",
     "取一个查询向量 q 和一个键向量 k，在位置 i 给 q 加上正弦位置向量 p_i，在位置 j 给 k 加上 p_j"
     "（不做投影，以便单独观察这一效应）：(q + p_i)·(k + p_j) = q·k + q·p_j + p_i·k + p_i·p_j。"
     "交叉项分别依赖 i 和 j，所以同样的距离 i − j 放在不同的位置，分数也不同。"},
    {"RoPE(q)·RoPE(k)ᵀ, q and k the same vector at every position",
     "RoPE(q)·RoPE(k)ᵀ，每个位置上的 q 和 k 都是同一个向量"},
    {"absolute: (q+p_i)·(k+p_j)", "绝对位置：(q+p_i)·(k+p_j)"},
    {"RoPE: R_i q · R_j k", "RoPE：R_i q · R_j k"},
    {"absolute: pairs at the same distance score up to {} apart",
     "绝对位置：距离相同的位置对，分数最多相差 {0}"},
    {"RoPE: relative position inside q·k", "RoPE：q·k 内部的相对位置"},
    {"Rotary position embedding (RoPE, used by Llama and many other current decoders) adds nothing. It rotates q "
     "and k: the dims pair up as (d, d + Dk/2), and each pair turns by the angle pos·θ_d, θ_d = 10000^(−2d/Dk), "
     "fast for the first pairs and slow for the last. For vectors of fixed lengths a dot product only sees the angle "
     "between two vectors (C11), and rotating q by iθ and k by jθ leaves the angle between them turned by (i − j)θ:",
     "旋转位置编码（RoPE，Llama 和当今许多解码器都在用）什么也不加，而是旋转 q 和 k：各维按 (d, d + Dk/2) "
     "两两配对，每一对转过角度 pos·θ_d，θ_d = 10000^(−2d/Dk)，前面的维度对转得快，后面的转得慢。"
     "长度固定时，点积只感知两个向量之间的夹角（C11），而把 q 转过 iθ、k 转过 jθ 后，两者之间的夹角恰好改变 (i − j)θ："},
    {"R(iθ)q · R(jθ)k = q · R((j − i)θ)k      depends on i − j only",
     "R(iθ)q · R(jθ)k = q · R((j − i)θ)k      只取决于 i − j"},
    {"RoPE: over all {} × {} pairs, scores at the same distance agree within {} (scores up to {})",
     "RoPE：在全部 {0} × {1} 个位置对上，距离相同的分数彼此相差不超过 {2}（分数最大为 {3}）"},
    {"Rotations keep lengths, so |q| and |k| still scale the score as before; only direction now carries "
     "the distance. attn applies RoPE to q and k before the product (attn forward --rope [BASE]), in the "
     "reference and in the tiled kernel.",
     "旋转不改变长度，所以 |q| 和 |k| 照旧缩放分数；距离信息只体现在方向上。attn 在相乘之前对 q 和 k 施加 RoPE"
     "（attn forward --rope [BASE]），参考实现和分块内核都是如此。"},
    {"ALiBi: a penalty on distance", "ALiBi：按距离惩罚"},
    {"ALiBi leaves q and k alone and adds −m_h·(i − j) to head h's scaled scores, a slope per head from a "
     "geometric sequence. With all raw scores equal (q = 0 below), the weights of the last query decay by "
     "the factor e^(−m_h) per step back: steep heads look at the last few tokens, gentle ones far back.",
     "ALiBi 不动 q 和 k，而是给头 h 缩放后的分数加上 −m_h·(i − j)，每个头的斜率取自一个等比数列。"
     "当所有原始分数都相等时（下面取 q = 0），最后一个查询的权重每往回一步就乘以因子 e^(−m_h)："
     "斜率陡的头只看最近的几个 token，斜率缓的头能看到很远之前。"},
    {"slopes for H = 8: {}", "H = 8 时的斜率：{0}"},
    {"[B=1, H=8, T=64, T]: causal, q = 0, ALiBi on", "[B=1, H=8, T=64, T]：因果，q = 0，启用 ALiBi"},
    {"head", "头"},
    {"slope m_h", "斜率 m_h"},
    {"weight on itself", "自身的权重"},
    {"weight 8+ back", "往回 8+ 步的权重"},
    {"each step back multiplies the weight by e^(−m_h) (relative error {})",
     "每往回一步，权重乘以 e^(−m_h)（相对误差 {0}）"},
    {"a steep head puts {} of its weight 8 or more tokens back, the gentlest {}",
     "最陡的头把 {0} 的权重放在往回 8 个及更远的 token 上，最平缓的头则为 {1}"},
    {"Every key is still reachable directly (C4); ALiBi only makes far keys need a larger q·k to win. "
     "Without a causal mask attn uses the distance |i − j| on both sides. ALiBi's bias depends on i − j "
     "alone as well, but it sits outside q·k: RoPE lets the content decide how position matters, ALiBi "
     "fixes one preference per head. Both are in attn forward (--rope, --alibi) and both run in the "
     "tiled kernel:",
     "每个键仍然能被直接读到（C4）；ALiBi 只是让远处的键需要更大的 q·k 才能胜出。没有因果掩码时，"
     "attn 在两侧都使用距离 |i − j|。ALiBi 的偏置同样只取决于 i − j，但它位于 q·k 之外：RoPE "
     "让内容决定位置如何起作用，ALiBi 则给每个头定死一种偏好。两者都可以在 attn forward 中使用"
     "（--rope、--alibi），也都能在分块内核中运行："},
    {"flash with RoPE and ALiBi equals the reference within {}",
     "同时启用 RoPE 和 ALiBi 时，flash 与参考实现的结果在 {0} 以内一致"},
}};
}  // namespace
}  // namespace attn::lessons
