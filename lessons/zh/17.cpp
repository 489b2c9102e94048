// Chinese text of lesson 17 (lessons/17_positional.cpp). Keys: the lesson's
// English exactly; {0}, {1}: the English template's arguments in order.
#include "catalogue.hpp"

namespace attn::lessons {
namespace {
const RegisterCatalogue zh17{Lang::zh, 17, {
    {"Attention does not see order", "注意力看不见顺序"},
    {"Self-attention mixes the value rows with weights that depend only on query-key dot products. "
     "Nothing in it says which token came first: shuffle the tokens and every token meets the same "
     "partners with the same scores, so each output row is the same as before, only at its new place. "
     "Attention is permutation-equivariant; any two tokens interact directly whatever their distance "
     "(C4), and that cuts both ways: distance is simply not visible.",
     "自注意力用权重把值的各行混合起来，而权重只取决于查询与键的点积。其中没有任何东西表明哪个 token 在前："
     "把 token 打乱，每个 token 遇到的仍是同样的伙伴、同样的分数，所以每一行输出都和原来一样，"
     "只是换到了新的位置上。注意力是置换等变的；任意两个 token 不论相距多远都直接交互（C4），"
     "而这是一把双刃剑：距离根本看不见。"},
    {"x shuffled", "打乱后的 x"},
    {"6 tokens, d_model 8", "6 个 token，d_model 8"},
    {"row i is x[perm[i]], perm = 3 0 5 1 4 2", "第 i 行是 x[perm[i]]，perm = 3 0 5 1 4 2"},
    {"softmax(q kᵀ/√8) v, no mask", "softmax(q kᵀ/√8) v，无掩码"},
    {"row i of out(shuffled x)", "打乱后 x 的输出的第 i 行"},
    {"equals row perm[i] of out(x)", "等于 x 的输出的第 perm[i] 行"},
    {"largest |difference|", "最大 |差|"},
    {"shuffling the tokens shuffles the output rows the same way (largest difference {}, float "
     "rounding)",
     "打乱 token 会以同样的方式打乱输出的各行（最大差 {0}，来自 float 舍入）"},
    {"A causal mask is the one exception: it is itself a statement about order (token i sees "
     "keys 0..i), and with it the shuffled outputs differ by up to {:.3f}. A decoder can infer "
     "some position from the mask alone; an encoder cannot.",
     "因果掩码是唯一的例外：它本身就是关于顺序的陈述（token i 看得到键 0..i），加上它之后，"
     "打乱后的输出最多相差 {0:.3f}。解码器仅凭掩码就能推断出一部分位置信息；编码器则不能。"},
    {"Sinusoidal positions", "正弦位置编码"},
    {"The fix is to add a position vector to each token's embedding before the first layer. Vaswani et al. "
     "use fixed sinusoids: PE[t, 2i] = sin(t/10000^(2i/D)), PE[t, 2i+1] = cos(t/10000^(2i/D)). Each pair "
     "of columns is a point on a circle turning at its own speed, so moving k positions on is the same "
     "rotation for every t: the model can read a relative offset with a linear map.",
     "解决办法是在第一层之前，给每个 token 的嵌入加上一个位置向量。Vaswani 等人使用固定的正弦函数："
     "PE[t, 2i] = sin(t/10000^(2i/D))，PE[t, 2i+1] = cos(t/10000^(2i/D))。每一对列都是圆上的一个点，"
     "以各自的速度旋转，所以往后移动 k 个位置，对每个 t 都是同一个旋转：模型用一个线性映射就能读出相对偏移。"},
    {"PE[t+3] is PE[t] rotated by a fixed angle per column pair (largest error {}); "
     "PE[t]·PE[t+3] = {:.4f} for every t (spread {})",
     "PE[t+3] 就是 PE[t] 在每对列上转过一个固定角度（最大误差 {0}）；"
     "对每个 t 都有 PE[t]·PE[t+3] = {1:.4f}（极差 {2}）"},
    {"with x + PE, the shuffled sentence gives different outputs (largest difference {:.3f}): "
     "order is now visible",
     "用 x + PE 时，打乱后的句子给出不同的输出（最大差 {0:.3f}）：顺序现在看得见了"},
    {"Learned positions are the other common choice (BERT, GPT-2): a trainable table (T_max, D), one row "
     "per position, added the same way. They can fit whatever the task needs, but there is no row for a "
     "position past T_max, and each row is learned only from the examples that reach it.",
     "另一种常见的选择是可学习的位置编码（BERT、GPT-2）：一张可训练的表 (T_max, D)，每个位置一行，"
     "以同样的方式加到嵌入上。它能拟合任务需要的任何模式，但超出 T_max 的位置没有对应的行，"
     "而且每一行只能从长度够得着它的样本中学到。"},
    {"Trained with and without positions", "有无位置信息的训练"},
    {"An encoder (no causal mask) learns to reverse 6 symbols: x1..x6 SEP [MASK]x6 -> x6..x1 at the "
     "[MASK] positions. Without positions, every [MASK] position holds the same token and sees the same "
     "set of keys, so all six get the same output: at most one answer per row can be right. Trained live "
     "below (2 layers, 2 seeds, the quick size of `attn experiment distance`).",
     "一个编码器（无因果掩码）学习把 6 个符号倒过来：输入 x1..x6 SEP [MASK]x6，在各 [MASK] 位置上输出 "
     "x6..x1。没有位置信息时，每个 [MASK] 位置上都是同一个 token，看到的也是同一组键，所以六个位置得到"
     "相同的输出：每行至多只有一个答案能对。下面现场训练（2 层，2 个种子，即 "
     "`attn experiment distance` 的 quick 规模）。"},
    {"positions", "位置编码"},
    {"held-out accuracy (mean of 2 seeds)", "留出集准确率（2 个种子的平均）"},
    {"steps", "步数"},
    {"none", "无"},
    {"learned", "可学习"},
    {"sinusoidal", "正弦"},
    {"the untrained encoder without positions is equivariant (weights of a shuffled row "
     "differ by {})",
     "未经训练、没有位置信息的编码器是等变的（打乱后各行的权重相差 {0}）"},
    {"without positions the reverse task stays at or below what one answer per row allows "
     "({:.3f} <= {:.3f}; chance {:.3f}); with positions it reaches {:.3f}",
     "没有位置信息时，倒序任务的准确率不超过每行只有一个答案时的上限（{0:.3f} <= {1:.3f}；"
     "随机猜测为 {2:.3f}）；有位置信息时达到 {3:.3f}"},
    {"The full comparison, with more seeds and steps, and an RNN against one attention layer on "
     "\"output the token d steps back\": attn experiment distance.",
     "完整的对比（更多种子、更多步数），以及 RNN 与单层注意力在“输出 d 步之前的 token”任务上的较量："
     "attn experiment distance。"},
    {"training: encoders with and without positions, 2 seeds", "训练中：有位置与无位置的编码器，2 个种子"},
}};
}  // namespace
}  // namespace attn::lessons
