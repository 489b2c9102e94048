// Chinese text of what the tour asks the reader to do, and of its map and sheet: the
// predictions (LessonContext::predict: the framework's words in part 0, each lesson's
// questions in its own part), the exercise lines, the map (lesson 1 and every header),
// `attn sheet` and the tour's closing line on the predictions. One file for all of it,
// so that the lessons' own catalogues (NN.cpp) stay as their translators left them.
// Keys: the English exactly; {0}, {1}: its arguments in order.
#include "catalogue.hpp"

namespace attn::lessons {
namespace {
const RegisterCatalogue zh_practice_framing{Lang::zh, kFramingPart, {
    // ------------------------------------------------------ predictions
    {"Predict: {}", "先猜一猜：{0}"},
    {"your guess (Enter skips):", "你的猜测（直接回车跳过）："},
    {"(not a number: digits, with k, M or G or a fraction like 1/3)",
     "（不是数字：请输入数字，可带 k、M 或 G，或写成 1/3 这样的分数）"},
    {"off by {}", "相差 {0}"},
    {"off by {:.0f}%", "相差 {0:.0f}%"},
    {"close to it", "很接近"},
    {"the right size, not close", "数量级对了，但不算接近"},
    {"far off: worth a second look at why", "差得较远：值得回头想想为什么"},
    {"live: {} \u00b7 yours: {} \u00b7 {}: {}.", "实算：{0} \u00b7 你的：{1} \u00b7 {2}：{3}。"},
    {"Predictions: {} asked, none answered (the tour waits for a guess only on a terminal, without --no-ask).",
     "预测：共提问 {0} 次，没有作答（只有在终端上、且未加 --no-ask 时，导览才会等你猜）。"},
    {"Predictions: {} asked, {} answered: {} close (within 10%, or the question's margin), {} the right size "
     "(within a factor of 2), {} further off.",
     "预测：共提问 {0} 次，作答 {1} 次：{2} 次很接近（误差在 10% 以内，或在该题的容差内），{3} 次数量级对了"
     "（相差不到 2 倍），{4} 次差得更远。"},
    // --------------------------------------------------------- exercises
    {"Your turn: `attn exercise {}` writes this step's inputs and task; `attn exercise {} --check ANSWER` grades "
     "what you compute.",
     "轮到你了：`attn exercise {0}` 写出这一步的输入和任务；`attn exercise {1} --check ANSWER` 给你算出的结果评分。"},
    {"Your turn: `attn exercise {}` and `attn exercise {}` write these steps' inputs and tasks; `--check ANSWER` "
     "after either grades what you compute.",
     "轮到你了：`attn exercise {0}` 和 `attn exercise {1}` 写出这两步的输入和任务；在任一条命令后加 "
     "`--check ANSWER`，给你算出的结果评分。"},
    // ---------------------------------------------------------------- map
    {"map: {}", "地图：{0}"},
    {"The map: one attention layer, from x to its output; on the right, the core lessons that explain each "
     "step (every lesson's header names its own steps)",
     "地图：一个注意力层，从 x 到它的输出；右列是讲解每一步的核心课（每一课的标题下都写着它讲的是哪几步）"},
    {"the input, a vector per token", "输入：每个词元一个向量"},
    {"x·Wᵀ per projection, H heads", "每个投影各乘 Wᵀ，切成 H 个头"},
    {"every query against every key", "每个查询与每个键相比"},
    {"keeps the spread near 1", "让离散程度保持在 1 附近"},
    {"−∞ where a key is hidden", "被遮住的键处填 −∞"},
    {"each row: weights summing to 1", "每行变成和为 1 的权重"},
    {"training only: drops weights", "只在训练时：丢弃部分权重"},
    {"a weighted sum of the values", "值的加权和"},
    {"the heads side by side again", "各头重新并排拼接"},
    {"mixes the heads: x's shape", "混合各头：形状与 x 相同"},
    // -------------------------------------------------------------- sheet
    {"attn sheet: attention on one screen (numbers measured at seed {})",
     "attn sheet：一屏看懂注意力（数字在种子 {0} 上实测）"},
    {"formula", "公式"},
    {"shapes", "形状"},
    {"scale", "缩放"},
    {"mask", "掩码"},
    {"{}, per head; Q = x·W_qᵀ + b_q, K and V alike; the heads merged, then · W_oᵀ + b_o.",
     "{0}，每个头各算一次；Q = x·W_qᵀ + b_q，K 和 V 同理；各头合并后再 · W_oᵀ + b_o。"},
    {"of a live layer with B = {}, T = {}, D = {}, H = {}, Dk = D / H = {}:",
     "取自一个现场运行的层，B = {0}，T = {1}，D = {2}，H = {3}，Dk = D / H = {4}："},
    {"scores, weights", "分数、权重"},
    {"weights · V", "权重 · V"},
    {"merged heads", "合并后的各头"},
    {"out = merged · W_oᵀ", "out = 合并结果 · W_oᵀ"},
    {"divide the scores by √Dk. Random q, k at Dk = {}: the std of q·k is {:.2f} unscaled, {:.2f} scaled; a row's "
     "largest weight {:.2f} unscaled, {:.2f} scaled (mean of {} rows).",
     "把分数除以 √Dk。Dk = {0} 的随机 q、k：q·k 的标准差不缩放时为 {1:.2f}，缩放后为 {2:.2f}；"
     "一行的最大权重不缩放时为 {3:.2f}，缩放后为 {4:.2f}（{5} 行的平均）。"},
    {"before softmax, add −∞ to the score of every key a query may not see: causal hides keys after the query, "
     "padding hides the keys past a sequence's length (shape [B, 1, 1, T] against [B, H, T, T] scores)",
     "在 softmax 之前，给查询不能看的每个键的分数加上 −∞：因果掩码遮住查询之后的键，填充掩码遮住超出序列长度的键"
     "（对 [B, H, T, T] 的分数，形状用 [B, 1, 1, T]）"},
    {"{}. Measured: the largest weight on a hidden key is {}; rows sum to 1 within {:.1e}.",
     "{0}。实测：被遮住的键上最大的权重是 {1}；各行之和与 1 相差不超过 {2:.1e}。"},
    {"Five common bugs (`attn check FILE` finds them in your own tensors):",
     "五个常见错误（`attn check FILE` 能在你自己的张量里找出它们）："},
    {"scores not divided by √Dk: rows turn one-hot", "分数没有除以 √Dk：各行变成独热"},
    {"softmax over queries (dim −2), not keys", "softmax 沿查询（dim −2）而不是沿键做"},
    {"weights zeroed after softmax: rows sum < 1", "softmax 之后才把权重置零：行和小于 1"},
    {"heads by reshape alone, no transpose(1, 2)", "只用 reshape 切头，没有 transpose(1, 2)"},
    {"x·W, not x·Wᵀ (nn.Linear keeps [out, in])", "x·W 而非 x·Wᵀ（nn.Linear 存 [out, in]）"},
    {"The command for each idea:", "每个概念对应的命令："},
    {"a first sitting, from the lookup to positions", "第一次学习：从查找到位置编码"},
    {"one idea, one lesson", "一个概念，一课"},
    {"every step's shape on your sizes", "按你的尺寸看每一步的形状"},
    {"why √Dk, measured", "为什么是 √Dk，实测"},
    {"the source's claims and their verdicts", "原文的论断及其结论"},
    {"write a step yourself", "自己动手写一步"},
    {"find the bug in your own attention", "找出你自己的注意力实现里的错误"},
    {"one token at a time with a KV cache", "用 KV 缓存逐个生成词元"},
    {"turn the knobs in a browser", "在浏览器里调参数"},
}};

// ------------------------------------------------- each lesson's own questions
const RegisterCatalogue zh_practice01{Lang::zh, 1, {
    {"The tour asks you to act: a line starting with ? asks for your guess before a number is computed "
     "(Enter skips; `--no-ask` or a pipe never waits), and a lesson that teaches a step ends with its "
     "exercise, which attn grades: `attn exercise --list`.",
     "导览也要你动手：以 ? 开头的一行请你在某个数算出之前先猜一猜（直接回车跳过；加 `--no-ask` 或输出到管道时不等待）；"
     "讲解某一步的课最后给出对应的练习，由 attn 评分：`attn exercise --list`。"},
    {"the query asks for an animal that does not fly; the values' first feature is legs (cat 4, dog 4, bird 2, "
     "car 0, bicycle 0). How many legs does the blended answer have?",
     "查询问的是“不会飞的动物”；值的第一个特征是腿数（猫 4，狗 4，鸟 2，汽车 0，自行车 0）。混合后的答案有几条腿？"},
}};
const RegisterCatalogue zh_practice04{Lang::zh, 4, {
    {"softmax turns the scores [0, 3] into two weights. What weight does the score 3 get?",
     "softmax 把分数 [0, 3] 变成两个权重。分数 3 得到的权重是多少？"},
}};
const RegisterCatalogue zh_practice05{Lang::zh, 5, {
    {"q and k have 256 entries each, every one drawn from N(0, 1). What is the standard deviation of q·k (before "
     "any scaling)?",
     "q 和 k 各有 256 个元素，每个都取自 N(0, 1)。q·k（未做任何缩放）的标准差是多少？"},
    {"without the division by √Dk, at Dk = 64 and T = 64: what is a row's largest weight, on average over the "
     "rows (between 1/64 and 1)?",
     "不除以 √Dk，Dk = 64、T = 64 时：一行中最大的权重，按各行平均是多少（介于 1/64 和 1 之间）？"},
}};
const RegisterCatalogue zh_practice08{Lang::zh, 8, {
    {"batch 1 has 3 real tokens and 2 padded ones. Softmax over all 5 keys first, then set the 2 padded weights "
     "to 0: what does the first query's row sum to?",
     "批次 1 有 3 个真实词元和 2 个填充词元。先对全部 5 个键做 softmax，再把 2 个填充位置的权重置 0：第一个查询那一行的和是多少？"},
}};
const RegisterCatalogue zh_practice10{Lang::zh, 10, {
    {"d_model = 512: how many more parameters do 8 heads of 64 have than 1 head of 512 (W_q, W_k, W_v, W_o and "
     "their biases)?",
     "d_model = 512：8 个 64 维的头比 1 个 512 维的头多多少个参数（W_q、W_k、W_v、W_o 及其偏置）？"},
}};
const RegisterCatalogue zh_practice12{Lang::zh, 12, {
    {"dropout with p = 0.1 on 512 rows of 64 softmax weights each: what is the largest row sum?",
     "对 512 行、每行 64 个 softmax 权重做 p = 0.1 的 dropout：最大的行和是多少？"},
}};
const RegisterCatalogue zh_practice14{Lang::zh, 14, {
    {"one sequence of T = 2048 tokens, 8 heads: how many MiB does one [1, 8, T, T] float32 score tensor take?",
     "一条 T = 2048 个词元的序列，8 个头：一个 [1, 8, T, T] 的 float32 分数张量占多少 MiB？"},
}};
const RegisterCatalogue zh_practice18{Lang::zh, 18, {
    {"32 layers, 32 key/value heads of Dk = 128, float16: how many GiB does the KV cache of one sequence take at "
     "T = 4096?",
     "32 层、32 个 Dk = 128 的键/值头、float16：T = 4096 时一条序列的 KV 缓存占多少 GiB？"},
}};
const RegisterCatalogue zh_practice21{Lang::zh, 21, {
    {"producing T = 1024 tokens one at a time: how many times less attention work (score and weighted-sum "
     "FLOPs) does the cache need than rerunning the causal pass at every step?",
     "逐个生成 T = 1024 个词元：与每一步都重跑因果前向相比，用缓存时的注意力计算量（分数与加权和的 FLOPs）少多少倍？"},
}};
}  // namespace
}  // namespace attn::lessons
