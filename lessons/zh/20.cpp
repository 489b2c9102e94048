// Chinese text of lesson 20 (lessons/20_cross_attention.cpp). Keys: the lesson's
// English exactly; {0}, {1}: the English template's arguments in order.
#include "catalogue.hpp"

namespace attn::lessons {
namespace {
const RegisterCatalogue zh20{Lang::zh, 20, {
    {"Queries from one sequence, keys and values from another", "查询来自一个序列，键和值来自另一个序列"},
    {"In self-attention one sequence x plays all three parts. An encoder-decoder (a translator, a "
     "speech recogniser) has two: the encoder has read the source sentence, and the decoder, writing "
     "the target one token at a time, asks the source what it needs. So the queries come from the "
     "decoder's states and the keys and values from the encoder's output. The two sequences have their "
     "own lengths (T target tokens, S source tokens) and may have their own widths: "
     "nn.MultiheadAttention's kdim and vdim are the widths of the key and value inputs, and W_k, W_v "
     "project them to the heads' Dk and Dv, which is all the dot product needs.",
     "在自注意力中，一个序列 x 同时扮演三个角色。编码器-解码器（例如翻译模型、语音识别器）则有两个序列："
     "编码器已经读完了源句子，解码器一次写出目标句子的一个 token，并向源句子询问自己需要的信息。"
     "所以查询来自解码器的状态，键和值来自编码器的输出。两个序列各有各的长度（T 个目标 token，S 个源 token），"
     "宽度也可以不同：nn.MultiheadAttention 的 kdim 和 vdim 就是键输入和值输入的宽度，W_k、W_v "
     "把它们投影到各头的 Dk 和 Dv，而点积需要的也只有这些。"},
    {"x (decoder)", "x（解码器）"},
    {"[B, T, D] queries' input", "[B, T, D] 查询的输入"},
    {"x_kv (encoder)", "x_kv（编码器）"},
    {"[B, S, kdim] keys' and values' input", "[B, S, kdim] 键和值的输入"},
    {"[H·Dk, kdim]", "[H·Dk, kdim]"},
    {"[B, H, T, S]: one row per target token, one column per source token",
     "[B, H, T, S]：每个目标 token 一行，每个源 token 一列"},
    {"decoder rows over source columns, head 0", "解码器的行对源序列的列，头 0"},
    {"out {} has the decoder's shape; each of its {} rows spreads weight over the {} source "
     "tokens (rows sum to 1 within {})",
     "输出 {0} 与解码器输入的形状相同；它的 {1} 行各自把权重分给 {2} 个源 token"
     "（每行之和与 1 相差不超过 {3}）"},
    {"The output follows the queries", "输出跟着查询走"},
    {"Give the decoder a longer source: S grows from 7 to 11 tokens. The weights get wider, the "
     "output does not: each target token still gets one vector, a weighted mix of the source's values.",
     "给解码器一个更长的源序列：S 从 7 个 token 增加到 11 个。权重变宽了，输出却没有："
     "每个目标 token 仍然只得到一个向量，即源序列各个值的加权混合。"},
    {"[B, T, D]: unchanged", "[B, T, D]：不变"},
    {"S = 11: weights {} but out still {}", "S = 11：权重为 {0}，输出仍为 {1}"},
    {"Which side the mask is on", "掩码在哪一侧"},
    {"Sources in a batch have different lengths too: here source 0 has all 7 tokens and source 1 only "
     "4, padded to 7. Padding is a property of the keys, so the mask is a key-padding mask over the "
     "source: the columns of the [T, S] weights, the same for every decoder row. No causal mask here: "
     "the source is complete before the decoder starts, and every target token may read all of it. "
     "(The causal mask belongs to the decoder's own self-attention, over its T × T scores.)",
     "同一批次里的源序列长度也各不相同：这里源序列 0 有全部 7 个 token，源序列 1 只有 4 个，填充到 7 个。"
     "填充是键的属性，所以这里的掩码是源序列上的键填充掩码：它遮住 [T, S] 权重中的列，对解码器的每一行都一样。"
     "这里不需要因果掩码：解码器开始之前源序列就已完整，每个目标 token 都可以读取它的全部内容。"
     "（因果掩码属于解码器自身的自注意力，作用在它的 T × T 分数上。）"},
    {"source 1 (4 real tokens), head 0", "源序列 1（4 个真实 token），头 0"},
    {"padded source tokens get weight {} and changing them moves the output by {}",
     "填充的源 token 得到的权重为 {0}，改变它们使输出变化 {1}"},
    {"without the source mask the same change moves the output by {}",
     "不加源序列掩码时，同样的改变使输出变化 {0}"},
    {"no causal mask across: changing the last source token moves target token 0 by {}",
     "两个序列之间没有因果掩码：改变最后一个源 token，目标 token 0 变化 {0}"},
    {"Padded target tokens: computed, then ignored", "填充的目标 token：照常计算，然后忽略"},
    {"The decoder side may be padded as well. Those are query rows, and a row of attention never "
     "reads another row's query: changing a padded target token's state changes its own output row "
     "and nothing else. So the query side needs no mask; the loss simply ignores the padded rows.",
     "解码器一侧也可能有填充。填充的是查询行，而注意力的一行从不读取另一行的查询：改变一个填充目标 token "
     "的状态，只会改变它自己那一行输出，其他什么都不变。所以查询一侧不需要掩码，损失直接忽略这些填充行即可。"},
    {"the other target rows move by {}; the changed row itself by {}",
     "其他目标行变化 {0}；被改动的那一行自身变化 {1}"},
}};
}  // namespace
}  // namespace attn::lessons
