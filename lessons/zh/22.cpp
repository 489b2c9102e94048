// Chinese text of lesson 22 (lessons/22_induction_heads.cpp). Keys: the lesson's English
// exactly; {0}, {1}: the English template's arguments in order.
#include "catalogue.hpp"

namespace attn::lessons {
namespace {
const RegisterCatalogue zh22{Lang::zh, 22, {
    {"Copying from the context", "从上下文中复制"},
    {"Give a decoder random tokens, then the same tokens again. The first copy cannot be predicted: the "
     "tokens are uniform, and the best loss without the context is ln S for S symbols. The second copy can "
     "be read off the first: after token A, look back for the earlier A, and predict the token that "
     "followed it. Language models do this all the time (a name, a phrase seen earlier), and the circuit "
     "that does it has a name: an induction head. It takes two layers. A head in layer 0 attends to the "
     "previous token and writes it into each position; a head in layer 1 matches the current token against "
     "those \"previous tokens\" and so finds the position after the earlier A, then copies the token it "
     "finds there.",
     "给解码器一串随机 token，然后把同一串再给一遍。第一遍无法预测：token 是均匀随机的，不看上下文时最好的损失是 "
     "ln S（S 个符号）。第二遍可以从第一遍读出来：看到 token A 之后，回头找先前出现的 A，预测它后面跟着的那个 "
     "token。语言模型时时刻刻都在这样做（前文出现过的名字、短语），做这件事的电路有个名字：归纳头。它需要两层。"
     "第 0 层的一个头关注前一个 token，把它写进每个位置；第 1 层的一个头拿当前 token 去匹配这些“前一个 token”，"
     "从而找到先前那个 A 之后的位置，再把那里的 token 复制出来。"},
    {"attn train --task induction trains the standard setting: rows of T = 32 tokens from S = 64 symbols, "
     "a random copy length n between T/4 and T/2 repeated once (random filler before it, so no fixed offset "
     "finds the copy), a 2-layer decoder with attention only (no MLP, 2 heads a layer), and the loss on the "
     "last tokens of the repeat.",
     "attn train --task induction 训练的是标准设定：每行 T = 32 个 token，取自 S = 64 个符号；随机长度 n（在 T/4 "
     "与 T/2 之间）的一段重复一次（前面是随机填充，所以任何固定偏移都找不到副本）；两层、只有注意力的解码器（没有 "
     "MLP，每层 2 个头）；损失只算重复段的最后几个 token。"},
    {"Three scores per head", "每个头的三个分数"},
    {"On a probe of n random tokens repeated once, with w the head's attention weights: the previous-token "
     "score is the mean over queries i of w[i][i-1]; the prefix-matching score is the mean over queries i "
     "of the repeat of w[i][i-n+1], the weight on the token after the earlier occurrence. The copying "
     "score reads the head's OV circuit: for each symbol t, the logits the head adds when it attends to t "
     "are W_U W_O W_V E[t] (the LayerNorms' centring and weights included, their scaling, the biases and "
     "the positions left out); the score is the share of symbols whose own logit is the largest. A phase "
     "change is the first evaluation where the loss is below halfway between ln S and the final loss.",
     "在 n 个随机 token 重复一次的探针序列上，记 w 为该头的注意力权重：前一 token 分数是 w[i][i-1] 对所有查询 i "
     "的平均；前缀匹配分数是 w[i][i-n+1] 对重复段中查询 i 的平均，即落在先前出现位置之后那个 token 上的权重。"
     "复制分数读的是该头的 OV 电路：对每个符号 t，该头关注 t 时加到 logits 上的是 W_U W_O W_V E[t]（包含层归一化的"
     "去均值和权重，略去其缩放、偏置和位置）；分数是自身那一项 logits 最大的符号所占的比例。相变指损失第一次低于 ln S "
     "与最终损失中点的那次评估。"},
    {"A quick run, live", "现场快速训练"},
    {"Open the model yourself", "亲手打开这个模型"},
    {"A 3000-step run of this model ships with attn as a GPT-2 folder, data/decoders/induction-2l, written by "
     "attn train --task induction --steps 3000 --export-gpt2 DIR. attn model induction probes it; "
     "attn model heads --model data/decoders/induction-2l --text abcdefghijklmnopabcdefghijklmnop --ablation "
     "removes each head in turn; attn model cache writes every activation of a forward pass; transformers' "
     "GPT2LMHeadModel opens the same folder.",
     "这个模型训练 3000 步的版本以 GPT-2 文件夹的形式随 attn 一起提供：data/decoders/induction-2l，由 "
     "attn train --task induction --steps 3000 --export-gpt2 DIR 写出。attn model induction 用探针检查它；"
     "attn model heads --model data/decoders/induction-2l --text abcdefghijklmnopabcdefghijklmnop --ablation "
     "逐个去掉每个头；attn model cache 写出一次前向计算的全部激活值；transformers 的 GPT2LMHeadModel "
     "也能打开同一个文件夹。"},
    {"Here: 400 steps (a few seconds). The full run, with the loss and the scores drawn over training "
     "and the phase change marked: attn train --task induction --svg induction.svg",
     "这里只训练 400 步（几秒钟）。完整的训练，连同画出的损失曲线、各分数随训练的变化以及标出的相变："
     "attn train --task induction --svg induction.svg"},
    {"training a 2-layer attention-only decoder on repeated random tokens",
     "在重复的随机 token 上训练两层、只有注意力的解码器"},
    {"step", "步"},
    {"repeat loss", "重复段损失"},
    {"prev-token (layer 0)", "前一 token（第 0 层）"},
    {"prefix (layer 1)", "前缀匹配（第 1 层）"},
    {"copying (layer 1)", "复制（第 1 层）"},
    {"phase change", "相变"},
    {"In this run (seed {}) the loss on the repeat crossed halfway from ln {} = {} to its final {} at "
     "step {}: previous-token head {}.{}, induction head {}.{}.",
     "本次训练（种子 {0}）中，重复段损失在第 {4} 步越过 ln {1} = {2} 到最终值 {3} 的中点："
     "前一 token 头 {5}.{6}，归纳头 {7}.{8}。"},
    {"In this run (seed {}) the loss on the repeat is still {} after {} steps: the drop has not come "
     "yet (a longer run has it; the stored runs below).",
     "本次训练（种子 {0}）中，{2} 步之后重复段损失仍为 {1}：下降还没有到来（更长的训练会有，见下面保存的结果）。"},
    {"the trained decoder's causal mask: every weight on a later token is exactly {}",
     "训练好的解码器的因果掩码：落在后面 token 上的每个权重都恰好是 {0}"},
    {"[B, H, T, T]: one probe row, each head's weights", "[B, H, T, T]：一行探针序列，每个头的权重"},
    {"layer {} head {}: queries of the repeat (rows), every key (columns)",
     "第 {0} 层第 {1} 个头：重复段的查询（行），所有键（列）"},
    {"head", "头"},
    {"prev-token", "前一 token"},
    {"prefix", "前缀匹配"},
    {"copying", "复制"},
    {"loss, head zeroed", "该头置零后的损失"},
    {"rise", "上升"},
    {"What five seeds say", "五个种子的结论"},
    {"The stored run ({}) was not found or does not read; scripts/make-induction-evidence.sh makes it.",
     "找不到保存的结果（{0}）或无法读取；scripts/make-induction-evidence.sh 可以生成它。"},
    {"The verdicts rest on a stored run: attn train --task induction at its defaults (1500 steps, "
     "{} seeds), made {} at commit {} on {}; scripts/make-induction-evidence.sh makes it again.",
     "结论依据保存的结果：attn train --task induction 的默认设置（1500 步，{0} 个种子），生成于 {1}，提交 {2}，"
     "处理器“{3}”；scripts/make-induction-evidence.sh 可以重新生成。"},
    {"seed", "种子"},
    {"phase change (step)", "相变（步）"},
    {"drop (steps)", "下降区间（步）"},
    {"time (s)", "时间（秒）"},
    {"final loss", "最终损失"},
    {"rise, prev-token head", "上升，前一 token 头"},
    {"rise, induction head", "上升，归纳头"},
    {"rise, both", "上升，两个都置零"},
    {"every seed has a phase change: the loss on the repeat falls from about ln {} to below half of it, "
     "crossing halfway between steps {} and {}, within {} s of training",
     "每个种子都有相变：重复段损失从约 ln {0} 降到它的一半以下，在第 {1} 到 {2} 步之间越过中点，训练用时不超过 {3} 秒"},
    {"the drop is sudden: its middle half (75% to 25% of the way down) takes at most {} steps of {}, "
     "within 5% of the run",
     "下降是突然的：下降过程的中间一半（从 75% 到 25% 的位置）最多用 {0} 步（共 {1} 步），不到训练的 5%"},
    {"layer 0 holds a previous-token head in every seed: score at least {} (a uniform head: {})",
     "每个种子的第 0 层都有一个前一 token 头：分数至少 {0}（均匀注意的头：{1}）"},
    {"layer 1 holds an induction head in every seed: prefix-matching score at least {} (a uniform head: "
     "about {}), copying score at least {}",
     "每个种子的第 1 层都有一个归纳头：前缀匹配分数至少 {0}（均匀注意的头：约 {1}），复制分数至少 {2}"},
    {"zeroing either head raises the loss on the repeat (by at least {} and {} nats), zeroing both by at "
     "least {}",
     "把任一个头置零都会使重复段损失上升（至少 {0} 和 {1} nats），两个都置零至少上升 {2}"},
}};
}  // namespace
}  // namespace attn::lessons
