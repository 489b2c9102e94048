// attn serve: the script of the lab's pages. Every number drawn here comes from
// attn's C++ library through the JSON API of this same server (/api/...); the
// script only draws. Strings from the server or the user are set with
// textContent, never parsed as markup.
"use strict";

const LANG = document.documentElement.lang === "zh" ? "zh" : "en";
const I18N = {
  en: {
    seq: "T (tokens)", d_k: "Dk (per head)", heads: "heads", scale: "scale", tau: "cosine τ",
        temperature: "temperature",
    mask: "mask", keep: "keys kept (padding)", window: "window (keys)", seed: "seed", show: "show head",
    sqrt: "1/√Dk", none: "1 (none)", inv_dk: "1/Dk", cosine: "cosine / τ",
    m_none: "none", m_padding: "padding", m_causal: "causal", m_window: "causal window",
    same: "The same numbers in your terminal:", shapes: "Shapes, in the order the forward pass makes them",
    step: "step", tensor: "tensor", formula: "formula", shape: "shape",
    Q: "Q of head", K: "K of head", V: "V of head", scores: "scores (scaled, masked) of head",
        weights: "weights of head",
    rows_sum: "every row of the weights sums to 1: max |sum − 1| =", computing: "computing…",
    query: "query", key: "key", weight: "weight", score: "score", masked: "masked", value: "value", row: "row",
        col: "column",
    dk: "Dk", unscaled: "unscaled q·k", scaled: "scaled q·k / √Dk", std: "std of the scores", theory: "theory",
    maxw: "mean max weight of a row (64 keys)", onehot: "rows with max weight > 0.99",
        jac: "mean ‖∂softmax/∂z‖ (gradient through softmax)",
    hist: "histogram of q·k (2048 draws; axis ±4 theory std)", example: "one softmax row of 16 scores: weights",
    text: "your sentence", show_heads: "Show the heads", task: "task", steps: "steps", start: "Start training",
        stop: "Stop",
    loss: "training loss", acc: "accuracy", head_w: "weights of head", last_layer: "of the last layer on an eval row",
    done: "done", stopped: "stopped", eval: "eval", busy: "busy", error: "error",
    empty: "type a sentence first", too_long: "the sentence has {got} bytes; the lab takes at most {max}",
    prompt: "your prompt", next_dist: "Next token", tokens: "tokens (id: text)", rank: "rank", id: "id",
    prob: "probability", logit: "logit", token: "token", prob_t: "at temperature", sample: "Sample the next token",
    greedy: "0 = greedy", ablate: "Click a head (layer.head) to ablate it (its output set to 0)",
    ablated_top: "with the ablated heads the next token is", layer: "layer",
    last_query: "every head's weights of the last query (it predicts the next token) over the tokens, layer",
    lens: "logit lens: the top next token read off the residual stream after each layer (through LN_f and the head)",
    queries: "queries", keys: "keys", dims: "dimensions", positions: "positions", steps_axis: "step",
  },
  zh: {
    seq: "T（词元数）", d_k: "Dk（每个头）", heads: "头数", scale: "缩放", tau: "余弦 τ", temperature: "温度",
    mask: "掩码", keep: "保留的键（填充）", window: "窗口（键数）", seed: "随机种子", show: "显示的头",
    sqrt: "1/√Dk", none: "1（不缩放）", inv_dk: "1/Dk", cosine: "余弦 / τ",
    m_none: "无", m_padding: "填充", m_causal: "因果", m_window: "因果窗口",
    same: "在终端里得到同样的数字：", shapes: "形状，按前向计算的顺序",
    step: "步骤", tensor: "张量", formula: "公式", shape: "形状",
    Q: "Q，头", K: "K，头", V: "V，头", scores: "分数（缩放并掩码后），头", weights: "注意力权重，头",
    rows_sum: "权重每一行之和为 1：最大 |和 − 1| =", computing: "计算中…",
    query: "查询", key: "键", weight: "权重", score: "分数", masked: "被掩码", value: "值", row: "行", col: "列",
    dk: "Dk", unscaled: "未缩放的 q·k", scaled: "缩放后的 q·k / √Dk", std: "分数的标准差", theory: "理论值",
    maxw: "每行最大权重的均值（64 个键）", onehot: "最大权重 > 0.99 的行", jac: "‖∂softmax/∂z‖ 的均值（经过 softmax 的梯度）",
    hist: "q·k 的直方图（2048 次抽样；坐标轴 ±4 个理论标准差）", example: "一行 16 个分数的 softmax：权重",
    text: "你的句子", show_heads: "显示各个头", task: "任务", steps: "步数", start: "开始训练", stop: "停止",
    loss: "训练损失", acc: "准确率", head_w: "注意力权重，头", last_layer: "（最后一层，一个评估样本）",
    done: "完成", stopped: "已停止", eval: "评估", busy: "忙", error: "错误",
    empty: "请先输入一句话", too_long: "这句话有 {got} 字节；实验室最多接受 {max} 字节",
    prompt: "开头文字", next_dist: "下一个词元", tokens: "词元（编号：文本）", rank: "名次", id: "编号",
    prob: "概率", logit: "logit", token: "词元", prob_t: "该温度下", sample: "采样下一个词元",
    greedy: "0 = 贪心", ablate: "点击一个头（层.头）将其消融（输出置 0）",
    ablated_top: "消融这些头之后，下一个词元是", layer: "层",
    last_query: "最后一个查询（它预测下一个词元）在各词元上的注意力权重，所有头，层",
    lens: "logit lens：在每一层之后的残差流上（经 LN_f 和输出头）读出的最可能的下一个词元",
    queries: "查询", keys: "键", dims: "维度", positions: "位置", steps_axis: "步",
  },
};
const t = (k) => (I18N[LANG][k] !== undefined ? I18N[LANG][k] : k);

// ---- small DOM helpers (text only)
function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "text") e.textContent = v;
    else if (k === "cls") e.className = v;
    else e.setAttribute(k, v);
  }
  for (const c of kids) if (c !== null && c !== undefined) e.append(c);
  return e;
}
const $ = (id) => document.getElementById(id);
const fmt = (x, d = 4) => (x === null ? "−∞" : Number(x).toFixed(d));

function debounce(fn, ms) {
  let timer = 0;
  return (...a) => { clearTimeout(timer); timer = setTimeout(() => fn(...a), ms); };
}

async function api(path, body) {
  const r = await fetch(path, { method: "POST", headers: { "Content-Type": "application/json" },
      body: JSON.stringify(body) });
  const j = await r.json();
  if (!r.ok) throw new Error(j.error || ("HTTP " + r.status));
  return j;
}

function setStatus(text, isError) {
  const s = $("status");
  s.textContent = text;
  s.className = isError ? "status error" : "status";
}

// ---- the tooltip shared by every heatmap
const tip = el("div", { cls: "tip", id: "tip" });
document.body.append(tip);
function showTip(ev, text) {
  tip.textContent = text;
  tip.style.display = "block";
  tip.style.left = (ev.clientX + 14) + "px";
  tip.style.top = (ev.clientY + 14) + "px";
}
function hideTip() { tip.style.display = "none"; }

// A heatmap of a matrix (rows of numbers, null = masked) on a canvas, with its colour scale
// (the values at its ends written beside it) on the right and axis titles. Colour: weights
// (unsigned) go from white at 0 to blue at the matrix's largest value (so a row of small
// weights is not white); signed data blue below 0, red above, at ± the largest magnitude.
// opts: labels (token labels: rows and columns), rowLabels / colLabels (each on its own),
// yTitle / xTitle (default: queries / keys with labels), describe(i, j): the hover text.
function heatmap(m, opts) {
  const rows = m.length, cols = rows ? m[0].length : 0;
  const cell = Math.max(4, Math.min(opts.cell || 22, Math.floor(360 / Math.max(rows, cols))));
  const rowLabels = opts.rowLabels || opts.labels, colLabels = opts.colLabels || opts.labels;
  const yTitle = opts.yTitle !== undefined ? opts.yTitle : (opts.labels ? t("queries") : "");
  const xTitle = opts.xTitle !== undefined ? opts.xTitle : (opts.labels ? t("keys") : "");
  const c = el("canvas", {});
  const g = c.getContext("2d");
  const font = `${Math.min(12, Math.max(8, cell - 2))}px sans-serif`;
  const short = (s) => (s.length > 14 ? s.slice(0, 13) + "…" : s);
  g.font = font;  // the label margins fit the longest label (at most 14 characters)
  const widest = (ls) => Math.ceil(Math.max(0, ...ls.map((s) => g.measureText(short(s)).width))) + 8;
  const left = (rowLabels ? widest(rowLabels) : 0) + (yTitle ? 16 : 0);
  const top = (colLabels ? widest(colLabels) : 0) + (xTitle ? 16 : 0);
  const scaleW = 62, h = Math.max(top + rows * cell, 90);
  c.width = left + cols * cell + scaleW; c.height = h;  // (resets the context's state)
  c.dataset.rows = rows; c.dataset.cols = cols; c.dataset.cell = cell; c.dataset.left = left; c.dataset.top = top;
  g.fillStyle = "#5b6475"; g.font = font; g.textBaseline = "middle";
  if (rowLabels) {
    g.textAlign = "right";
    for (let i = 0; i < rows; ++i) g.fillText(short(rowLabels[i]), left - 4, top + (i + 0.5) * cell);
  }
  if (colLabels)
    for (let j = 0; j < cols; ++j) {
      g.save(); g.translate(left + (j + 0.5) * cell, top - 4); g.rotate(-Math.PI / 2); g.textAlign = "left";
      g.fillText(short(colLabels[j]), 0, 0); g.restore();
    }
  g.font = "italic 11px sans-serif"; g.textAlign = "center";
  if (xTitle) g.fillText(xTitle + " →", left + (cols * cell) / 2, 7);
  // (the y title reads bottom to top, its arrow pointing down the rows)
  if (yTitle) {
    g.save(); g.translate(7, top + (rows * cell) / 2); g.rotate(-Math.PI / 2); g.fillText("← " + yTitle, 0, 0);
    g.restore();
  }
  let amax = 0;
  for (const r of m) for (const v of r) if (v !== null) amax = Math.max(amax, Math.abs(v));
  const colour = (v) => {
    const a = amax > 0 ? Math.min(1, Math.abs(v) / amax) : 0;
    if (opts.signed) return v >= 0 ? `rgba(200,40,40,${a})` : `rgba(40,80,200,${a})`;
    return `rgba(43,89,195,${a})`;
  };
  for (let i = 0; i < rows; ++i)
    for (let j = 0; j < cols; ++j) {
      const v = m[i][j], x = left + j * cell, y = top + i * cell;
      if (v === null || (opts.allowed && !opts.allowed[i][j])) {
        g.fillStyle = "#e8e8ec"; g.fillRect(x, y, cell, cell);
        g.strokeStyle = "#b8b8c0"; g.beginPath(); g.moveTo(x, y); g.lineTo(x + cell, y + cell); g.stroke();
        continue;
      }
      g.fillStyle = colour(v);
      g.fillRect(x, y, cell, cell);
    }
  colourScale(g, left + cols * cell + 8, top, Math.max(60, Math.min(rows * cell, 160)), amax, opts.signed);
  c.dataset.scaleMax = amax;
  c.addEventListener("mousemove", (ev) => {
    const b = c.getBoundingClientRect();
    const j = Math.floor((ev.clientX - b.left - left) / cell), i = Math.floor((ev.clientY - b.top - top) / cell);
    if (i < 0 || j < 0 || i >= rows || j >= cols) return hideTip();
    showTip(ev, opts.describe(i, j));
  });
  c.addEventListener("mouseleave", hideTip);
  return c;
}

// The colour bar of a heatmap at (x, y), height h: its top is the largest magnitude amax,
// its bottom 0 (signed: −amax), the values written beside it.
function colourScale(g, x, y, h, amax, signed) {
  for (let k = 0; k < h; ++k) {
    const v = signed ? amax * (1 - (2 * k) / (h - 1)) : amax * (1 - k / (h - 1));
    const a = amax > 0 ? Math.abs(v) / amax : 0;
    g.fillStyle = signed ? (v >= 0 ? `rgba(200,40,40,${a})` : `rgba(40,80,200,${a})`) : `rgba(43,89,195,${a})`;
    g.fillRect(x, y + k, 10, 1);
  }
  g.strokeStyle = "#b8b8c0"; g.strokeRect(x + 0.5, y + 0.5, 10, h - 1);
  g.fillStyle = "#5b6475"; g.font = "10px sans-serif"; g.textAlign = "left"; g.textBaseline = "middle";
  const num = (v) => (Math.abs(v) >= 100 ? v.toFixed(0) : Math.abs(v) >= 1 ? v.toFixed(2) : v.toFixed(3));
  g.fillText(num(amax), x + 13, y + 5);
  g.fillText("0", x + 13, signed ? y + h / 2 : y + h - 5);
  if (signed) g.fillText(num(-amax), x + 13, y + h - 5);
}

function figure(caption, ...kids) { return el("figure", {}, el("figcaption", { text: caption }), ...kids); }

function knob(label, input, out) {
  const l = el("label", {}, el("span", { text: label + " " }, out || null), input);
  return l;
}
function range(id, min, max, value, step) {
  return el("input", { type: "range", id, min: String(min), max: String(max), value: String(value),
      step: String(step || 1) });
}
function select(id, options, value) {
  const s = el("select", { id });
  for (const [v, label] of options) {
    const o = el("option", { value: v, text: label });
    if (v === value) o.selected = true;
    s.append(o);
  }
  return s;
}

// ---- /playground
function playground() {
  const outs = {};
  const o = (id) => (outs[id] = el("output", { id: id + "_out" }));
  const knobs = $("knobs");
  knobs.append(
    knob(t("seq"), range("seq", 1, 64, 8), o("seq")),
    knob(t("d_k"), range("d_k", 1, 64, 8), o("d_k")),
    knob(t("heads"), range("heads", 1, 8, 2), o("heads")),
    knob(t("scale"), select("scale", [["sqrt", t("sqrt")], ["none", t("none")], ["inv_dk", t("inv_dk")], ["cosine",
        t("cosine")]], "sqrt")),
    knob(t("tau"), range("tau", 0.05, 2, 1, 0.05), o("tau")),
    knob(t("temperature"), range("temperature", -3, 3, 0, 0.1), o("temperature")),
    knob(t("mask"), select("mask", [["none", t("m_none")], ["padding", t("m_padding")], ["causal", t("m_causal")],
        ["window", t("m_window")]], "none")),
    knob(t("keep"), range("keep", 0, 8, 6), o("keep")),
    knob(t("window"), range("window", 1, 8, 3), o("window")),
    knob(t("seed"), el("input", { type: "number", id: "seed", min: "0", value: "0" })),
    knob(t("show"), range("show", 0, 1, 0), o("show")));
  const temperature = () => Math.pow(2, Number($("temperature").value));
  const request = () => ({
    seq: Number($("seq").value), d_k: Number($("d_k").value), heads: Number($("heads").value),
    scale: $("scale").value, tau: Number($("tau").value), temperature: Number(temperature().toPrecision(6)),
    mask: $("mask").value, keep: Number($("keep").value), window: Number($("window").value),
        seed: Number($("seed").value) || 0,
  });
  let serial = 0;
  const update = async () => {
    const T = Number($("seq").value);
    for (const id of ["keep", "window"]) {
      $(id).max = String(T);
      if (Number($(id).value) > T) $(id).value = String(T);
    }
    $("show").max = String(Number($("heads").value) - 1);
    if (Number($("show").value) > Number($("show").max)) $("show").value = $("show").max;
    for (const id of Object.keys(outs))
      outs[id].textContent = id === "temperature" ? temperature().toPrecision(3) : $(id).value;
    const mine = ++serial;
    setStatus(t("computing"));
    try {
      const r = await api("/api/attention", request());
      if (mine !== serial) return;  // a newer knob position is on its way
      window.attnLab = { attention: r, head: Number($("show").value) };
      drawAttention(r, Number($("show").value));
      setStatus(t("rows_sum") + " " + r.row_sum_error.toExponential(1));
      document.body.dataset.ready = String(mine);
    } catch (e) { if (mine === serial) setStatus(e.message, true); }
  };
  const later = debounce(update, 120);
  for (const e of knobs.querySelectorAll("input, select")) e.addEventListener("input", later);
  update();
}

function drawAttention(r, h) {
  $("command").textContent = r.command;
  const tb = el("tbody");
  for (const s of r.shapes) tb.append(el("tr", {}, el("td", { text: s.name }), el("td", { text: s.formula }), el("td",
      { text: s.shape })));
  $("shapes").replaceChildren(el("caption", { text: t("shapes") }),
    el("thead", {}, el("tr", {}, el("th", { text: t("tensor") }), el("th", { text: t("formula") }), el("th",
        { text: t("shape") }))), tb);
  const T = r.config.seq, dk = r.config.d_k;
  const vec = (name) => (i, j) =>
      `${name}[${t("row")} ${i}, ${t("col")} ${j}] = ${fmt(r[name.toLowerCase()][h][i][j])}`;
  const pair = (i, j) => {
    const allowed = r.allowed[i][j] === 1;
    const score = allowed ? fmt(r.scores[h][i][j]) : "−∞ (" + t("masked") + ")";
    return `${t("query")} ${i} → ${t("key")} ${j}\n${t("score")} ${score}\n${t("weight")} ${fmt(r.weights[h][i][j])}`;
  };
  // (random vectors: the rows are positions, no tokens)
  const pos = [...Array(T).keys()].map(String);
  const vecAxes = { rowLabels: pos, yTitle: t("positions"), xTitle: t("dims") };
  const pairAxes = { labels: pos, yTitle: t("queries"), xTitle: t("keys") };
  const grid = $("grid");
  grid.replaceChildren(
    figure(`${t("Q")} ${h} [${T}, ${dk}]`, heatmap(r.q[h], { signed: true, describe: vec("Q"), cell: 14, ...vecAxes })),
    figure(`${t("K")} ${h} [${T}, ${dk}]`, heatmap(r.k[h], { signed: true, describe: vec("K"), cell: 14, ...vecAxes })),
    figure(`${t("V")} ${h} [${T}, ${dk}]`, heatmap(r.v[h], { signed: true, describe: vec("V"), cell: 14, ...vecAxes })),
    figure(`${t("scores")} ${h} [${T}, ${T}]`,
           heatmap(r.scores[h], { signed: true, allowed: r.allowed, describe: pair, ...pairAxes })),
    figure(`${t("weights")} ${h} [${T}, ${T}]`,
           Object.assign(heatmap(r.weights[h], { allowed: r.allowed, describe: pair, ...pairAxes }),
               { id: "weights" })));
}

// ---- /sqrt-dk
function sqrtDk() {
  const out = el("output", { id: "dk_out" });
  $("knobs").append(knob(t("dk"), range("dk", 0, 12, 6), out), knob(t("seed"), el("input", { type: "number",
      id: "seed", min: "0", value: "0" })));
  let serial = 0;
  const update = async () => {
    const dk = Math.pow(2, Number($("dk").value));
    out.textContent = String(dk);
    const mine = ++serial;
    setStatus(t("computing"));
    try {
      const r = await api("/api/sqrt-dk", { d_k: dk, seed: Number($("seed").value) || 0 });
      if (mine !== serial) return;
      window.attnLab = { sqrtDk: r };
      drawSqrtDk(r);
      setStatus("");
      document.body.dataset.ready = String(mine);
    } catch (e) { if (mine === serial) setStatus(e.message, true); }
  };
  const later = debounce(update, 120);
  $("dk").addEventListener("input", later);
  $("seed").addEventListener("input", later);
  update();
}

function bars(values, w, h, color, lo, hi) {
  const c = el("canvas", { width: String(w), height: String(h) });
  const g = c.getContext("2d");
  const top = Math.max(...values, 1e-12);
  const bw = w / values.length;
  g.fillStyle = color;
  values.forEach((v, i) => { const bh = (v / top) * (h - 16); g.fillRect(i * bw + 1, h - 14 - bh, bw - 2, bh); });
  g.fillStyle = "#5b6475"; g.font = "11px sans-serif";
  if (lo !== undefined) { g.fillText(lo, 2, h - 2); const s = String(hi); g.fillText(s, w - 7 * s.length, h - 2); }
  return c;
}

function drawSqrtDk(r) {
  $("command").textContent = r.command;
  const tb = el("tbody");
  const [u, s] = r.rows;
  const line = (label, a, b) => tb.append(el("tr", {}, el("td", { text: label }), el("td", { text: a }), el("td",
      { text: b })));
  line(t("std"), `${fmt(u.std, 3)} (${t("theory")} ${fmt(u.theory_std, 3)})`,
      `${fmt(s.std, 3)} (${t("theory")} ${fmt(s.theory_std, 3)})`);
  line(t("maxw"), fmt(u.mean_max_weight, 3), fmt(s.mean_max_weight, 3));
  line(t("onehot"), (100 * u.onehot_fraction).toFixed(1) + "%", (100 * s.onehot_fraction).toFixed(1) + "%");
  line(t("jac"), fmt(u.mean_jacobian_norm, 4), fmt(s.mean_jacobian_norm, 4));
  $("shapes").replaceChildren(el("thead", {}, el("tr", {}, el("th", { text: "" }), el("th", { text: t("unscaled") }),
      el("th", { text: t("scaled") }))), tb);
  const fig = (row, name) => figure(`${name}: ${t("hist")}`,
    bars(row.histogram.counts, 360, 140, "#2b59c3", fmt(row.histogram.lo, 1), fmt(row.histogram.hi, 1)),
    el("figcaption", { text: t("example") }), bars(row.example_weights, 360, 90, "#c0392b", 0, 15));
  $("grid").replaceChildren(fig(u, t("unscaled")), fig(s, t("scaled")));
}

// ---- /sentence
// The text goes to POST /api/sentence (JSON); the page it computed is then shown in the frame
// from /sentence/view/ID (a GET that only reads what was computed).
function sentence() {
  const maxBytes = Number(document.body.dataset.maxText);
  const input = el("input", { type: "text", id: "text", maxlength: String(maxBytes),
    value: "The animal didn't cross the street because it was too tired." });
  const go = el("button", { id: "go", text: t("show_heads") });
  $("knobs").append(knob(t("text"), input), go);
  // data-fit: the attention page sizes this frame to its content (lib/viz/src/html_page.js)
  const frame = el("iframe", { id: "view", title: "attention", "data-fit": "" });
  $("grid").replaceChildren(frame);
  const done = () => { document.body.dataset.ready = String(Date.now()); };
  const show = async () => {
    const text = input.value, bytes = new TextEncoder().encode(text).length;
    // the same page from the terminal (the text single-quoted for a POSIX shell)
    $("command").textContent = "attn model attention --text '" + text.replace(/'/g, "'\\''") + "' --html heads.html";
    if (!text) { setStatus(t("empty"), true); return done(); }
    if (bytes > maxBytes) {
      setStatus(t("too_long").replace("{got}", bytes).replace("{max}", maxBytes), true);
      return done();
    }
    setStatus(t("computing"));
    try {
      const r = await api("/api/sentence", { text, lang: LANG });
      setStatus("");
      frame.src = r.view;
    } catch (e) { setStatus(e.message, true); done(); }
  };
  frame.addEventListener("load", () => { if (frame.src) done(); });
  go.addEventListener("click", show);
  input.addEventListener("keydown", (e) => { if (e.key === "Enter") show(); });
  show();
}

// ---- /train
// POST /api/train starts the run; its answer streams the events (server-sent events format),
// read here from the fetch's body. Stop aborts the fetch, which ends the run on the server.
async function readEvents(response, onEvent) {
  const reader = response.body.getReader(), dec = new TextDecoder();
  let buf = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += dec.decode(value, { stream: true });
    let k;
    while ((k = buf.indexOf("\n\n")) >= 0) {
      const block = buf.slice(0, k);
      buf = buf.slice(k + 2);
      for (const line of block.split("\n")) if (line.startsWith("data: ")) onEvent(JSON.parse(line.slice(6)));
    }
  }
}

function train() {
  const task = select("task", ["copy", "reverse", "sort", "recall", "distance"].map((x) => [x, x]), "reverse");
  const steps = el("input", { type: "number", id: "steps", min: "1", max: "2000", value: "300" });
  const seed = el("input", { type: "number", id: "seed", min: "0", value: "0" });
  const head = select("head", [0, 1, 2, 3].map((x) => [String(x), String(x)]), "0");
  const start = el("button", { id: "start", text: t("start") }), stop = el("button", { id: "stop", text: t("stop") });
  stop.disabled = true;
  $("knobs").append(knob(t("task"), task), knob(t("steps"), steps), knob(t("seed"), seed), knob(t("show"), head),
      start, stop);
  let ctrl = null, losses = [], tokens = [];
  const finish = (text, bad, abort) => {
    if (ctrl && abort) ctrl.abort();
    ctrl = null; start.disabled = false; stop.disabled = true; setStatus(text, bad);
  };
  const onEvent = (e) => {
    window.attnLab.train.push(e);
    if (e.event === "start") { tokens = e.tokens; $("command").textContent = e.command; }
    if (e.event === "progress") losses.push([e.step, e.loss]);
    if (e.event === "error") return finish(t("error") + ": " + e.error, true);
    drawTraining(e, losses, tokens, Number(head.value));
    if (e.event === "progress")
      setStatus(`${t("step")} ${e.step}/${e.steps}  ${t("loss")} ${fmt(e.loss, 3)}  ` +
                `${t("acc")} ${(100 * e.accuracy).toFixed(1)}%` +
                (e.eval ? `  ${t("eval")} ${(100 * e.eval.accuracy).toFixed(1)}%` : ""));
    if (e.event === "done")
      finish(`${e.stopped ? t("stopped") : t("done")}: ${e.steps_done} ${t("steps")}, ` +
             `${t("eval")} ${t("acc")} ${(100 * e.eval.accuracy).toFixed(1)}%`);
  };
  start.addEventListener("click", async () => {
    losses = [];
    const mine = new AbortController();
    ctrl = mine;
    start.disabled = true; stop.disabled = false;
    window.attnLab = { train: [] };
    const body = { task: task.value, steps: Number(steps.value), seed: Number(seed.value) || 0,
                   head: Number(head.value) };
    try {
      const r = await fetch("/api/train", { method: "POST", headers: { "Content-Type": "application/json" },
                                            body: JSON.stringify(body), signal: mine.signal });
      if (!r.ok) {
        const j = await r.json().catch(() => ({}));
        return finish(j.error || ("HTTP " + r.status), true);
      }
      await readEvents(r, (e) => { if (ctrl === mine) onEvent(e); });
    } catch (err) {
      if (ctrl === mine) finish(t("busy") + " / " + t("error") + ": " + err.message, true);
    }
  });
  stop.addEventListener("click", () => finish(t("stopped"), false, true));
  document.body.dataset.ready = "1";
}

function drawTraining(e, losses, tokens, h) {
  // The loss against the step: axis titles, the loss's top and 0, the first and last step.
  const W = 460, H = 220, x0 = 48, y0 = 190, pw = W - x0 - 10, ph = 175;
  const curve = el("canvas", { width: String(W), height: String(H), id: "curve" });
  const g = curve.getContext("2d");
  g.strokeStyle = "#b8b8c0"; g.beginPath(); g.moveTo(x0, y0 - ph); g.lineTo(x0, y0); g.lineTo(x0 + pw, y0); g.stroke();
  g.fillStyle = "#5b6475"; g.font = "11px sans-serif";
  if (losses.length > 1) {
    const top = Math.max(...losses.map((p) => p[1])), s0 = losses[0][0], s1 = losses[losses.length - 1][0];
    const X = (step) => x0 + ((step - s0) / Math.max(1, s1 - s0)) * pw, Y = (v) => y0 - (v / top) * ph;
    g.strokeStyle = "#2b59c3"; g.beginPath();
    losses.forEach(([step, v], i) => (i ? g.lineTo(X(step), Y(v)) : g.moveTo(X(step), Y(v))));
    g.stroke();
    g.textAlign = "right"; g.textBaseline = "middle";
    g.fillText(fmt(top, 2), x0 - 4, y0 - ph); g.fillText("0", x0 - 4, y0);
    g.textAlign = "center"; g.textBaseline = "top";
    g.fillText(String(s0), x0, y0 + 3); g.fillText(String(s1), x0 + pw, y0 + 3);
  }
  g.textAlign = "center"; g.textBaseline = "top"; g.font = "italic 11px sans-serif";
  g.fillText(t("steps_axis") + " →", x0 + pw / 2, y0 + 16);
  g.save(); g.translate(10, y0 - ph / 2); g.rotate(-Math.PI / 2); g.fillText(t("loss") + " →", 0, -6); g.restore();
  // (the loss axis points up: larger is higher)
  const w = e.weights;
  const describe = (i, j) =>
      `${t("query")} ${i} (${tokens[i]}) → ${t("key")} ${j} (${tokens[j]})\n${t("weight")} ${fmt(w[i][j])}`;
  $("grid").replaceChildren(figure(t("loss"), curve),
    figure(`${t("head_w")} ${h} ${t("last_layer")}`, heatmap(w, { describe, cell: 18, labels: tokens })));
}

// ---- /decoder
// The prompt's tokens and the next-token distribution, from POST /api/decoder (the numbers of
// `attn model next --json`, whose command the page prints), its embeddings, every layer's
// residual stream and heads (the tensors of `attn model cache --dump -`, whose command the
// page prints too), the logit lens, sampling with temperature, top-k and top-p, and ablation.
Object.assign(I18N.en, {
  top_k: "top-k", top_k_off: "0 = off", top_p: "top-p", top_p_off: "1 = off",
  sampled_from: "sampled from (top-k, top-p)", no_cli: "no attn command repeats this draw: `attn model generate` " +
    "has temperature and seed but no top-k or top-p (with top-k 0 and top-p 1 the page prints its command)",
  embeddings: "embeddings: each token's wte[id] and its position's wpe[t], the first dimensions",
  wte: "token embedding wte[id]", wpe: "position embedding wpe[t]", norms: "norms (L2) per token",
  norm_tok: "‖wte[id]‖", norm_pos: "‖wpe[t]‖", norm_sum: "‖wte + wpe‖",
  residual: "the residual stream, layer by layer: the norm (L2) of what each block's attention and MLP add, and of " +
    "the stream after it, at the last token (it predicts the next one)",
  attn_add: "‖attention out‖", mlp_add: "‖MLP out‖", resid_after: "‖residual after‖",
  resid_map: "‖residual stream‖ per token (rows: entering block 0, then after each block)",
  entering: "embedding", after: "after block", tokens_axis: "tokens", stream: "stream",
  overlay: "heads of a layer, overlaid (bertviz-style): a line from a query (left) to a key (right), its opacity the " +
    "weight, one colour a head", all_heads: "all heads", head: "head",
        hover_query: "hover a query to see its lines alone",
  last_row: "each head's weights of the last query over the tokens",
});
Object.assign(I18N.zh, {
  top_k: "top-k", top_k_off: "0 = 不限", top_p: "top-p", top_p_off: "1 = 不限",
  sampled_from: "采样所用分布（top-k、top-p）", no_cli: "没有 attn 命令能重现这次抽样：`attn model generate` " +
    "有温度和种子，但没有 top-k 和 top-p（top-k 为 0、top-p 为 1 时页面会打印它的命令）",
  embeddings: "嵌入：每个词元的 wte[id] 和其位置的 wpe[t]，前几个维度",
  wte: "词元嵌入 wte[id]", wpe: "位置嵌入 wpe[t]", norms: "每个词元的范数（L2）",
  norm_tok: "‖wte[id]‖", norm_pos: "‖wpe[t]‖", norm_sum: "‖wte + wpe‖",
  residual: "残差流，逐层：每个块的注意力和 MLP 加入的量的范数（L2），以及之后残差流的范数，取最后一个词元（它预测下一个）",
  attn_add: "‖注意力输出‖", mlp_add: "‖MLP 输出‖", resid_after: "‖之后的残差流‖",
  resid_map: "每个词元的‖残差流‖（行：进入第 0 块时，然后是每个块之后）",
  entering: "嵌入", after: "块之后", tokens_axis: "词元", stream: "残差流",
  overlay: "一层的所有头叠在一起（bertviz 风格）：从查询（左）到键（右）的线，不透明度为权重，每个头一种颜色",
  all_heads: "所有头", head: "头", hover_query: "把鼠标移到一个查询上，只看它的线",
  last_row: "每个头的最后一个查询在各词元上的权重",
});
const HEAD_COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
                      "#bcbd22", "#17becf", "#393b79", "#ad494a", "#637939", "#7b4173", "#3182bd", "#e6550d"];
const headColour = (h) => HEAD_COLOURS[h % HEAD_COLOURS.length];
// a token as a label: JSON escapes for control characters, ␣ for a space
const tokenLabel = (tk) => JSON.stringify(tk.text).slice(1, -1).replace(/ /g, "␣") || "·";

function decoder() {
  const maxBytes = Number(document.body.dataset.maxText);
  const input = el("input", { type: "text", id: "prompt", maxlength: String(maxBytes), value: "To be, or not to b" });
  const go = el("button", { id: "go", text: t("next_dist") });
  const temp = el("input", { type: "number", id: "temperature", min: "0", max: "100", step: "0.05", value: "1" });
  const topK = el("input", { type: "number", id: "top_k", min: "0", step: "1", value: "0" });
  const topP = el("input", { type: "number", id: "top_p", min: "0.01", max: "1", step: "0.05", value: "1" });
  const seed = el("input", { type: "number", id: "seed", min: "0", value: "0" });
  const sample = el("button", { id: "sample", text: t("sample") });
  $("knobs").append(knob(t("prompt"), input), go, knob(`${t("temperature")} (${t("greedy")})`, temp),
                    knob(`${t("top_k")} (${t("top_k_off")})`, topK), knob(`${t("top_p")} (${t("top_p_off")})`, topP),
                    knob(t("seed"), seed), sample);
  let serial = 0;
  const ablated = new Set();  // "layer.head"
  const toggle = (key) => { if (ablated.has(key)) ablated.delete(key); else ablated.add(key); show(); };
  window.attnLab = { toggleHead: toggle, layer: 0, head: -1 };
  const show = async () => {
    const text = input.value, mine = ++serial;
    if (!text) { setStatus(t("empty"), true); return; }
    if (new TextEncoder().encode(text).length > maxBytes) {
      setStatus(t("too_long").replace("{got}", new TextEncoder().encode(text).length).replace("{max}", maxBytes), true);
      return;
    }
    setStatus(t("computing"));
    try {
      const r = await api("/api/decoder", { text, top: 10, temperature: Number(temp.value),
                                            top_k: Math.max(0, Math.round(Number(topK.value) || 0)),
                                            top_p: Number(topP.value) || 1, seed: Number(seed.value) || 0,
                                            layer: window.attnLab.layer || 0,
                                            ablate: [...ablated].map((k) => k.split(".").map(Number)) });
      if (mine !== serial) return;
      window.attnLab.decoder = r;
      drawDecoder(r, ablated, toggle, show);
      setStatus("");
      document.body.dataset.ready = String(mine);
    } catch (e) { if (mine === serial) setStatus(e.message, true); }
  };
  go.addEventListener("click", show);
  input.addEventListener("keydown", (e) => { if (e.key === "Enter") show(); });
  for (const k of [temp, topK, topP, seed]) k.addEventListener("change", show);
  // The token the server drew (`attn model generate --steps 1 --temperature T --seed S`'s when
  // top-k and top-p are off), appended.
  sample.addEventListener("click", () => {
    const r = window.attnLab && window.attnLab.decoder;
    if (!r || !r.sample) return;
    window.attnLab.sampled = r.sample;
    input.value += r.sample.text;
    show();
  });
  show();
}

function nextTable(r) {
  const pct = (p) => (p === null ? "—" : (100 * p).toFixed(2) + "%");
  const tb = el("tbody");
  for (const n of r.next) {
    const bar = el("span", { cls: "bar" });
    bar.style.width = Math.round(200 * n.prob) + "px";
    tb.append(el("tr", {}, el("td", { text: String(n.rank) }), el("td", { text: String(n.id) }),
      el("td", { text: JSON.stringify(n.text) }), el("td", { text: pct(n.prob) }, " ", bar),
      el("td", { text: n.logit.toFixed(4) }), el("td", { text: pct(r.next_at_temperature[n.rank - 1]) }),
      el("td", { text: pct(r.next_sampled[n.rank - 1]) })));
  }
  $("shapes").replaceChildren(el("caption", { text: t("next_dist") }),
    el("thead", {}, el("tr", {}, ...[t("rank"), t("id"), t("token"), t("prob"), t("logit"),
      `${t("prob_t")} ${r.temperature}`, `${t("sampled_from")} k=${r.top_k} p=${r.top_p}`].map((x) => el("th",
          { text: x })))),
    tb);
}

function drawDecoder(r, ablated, toggle, show) {
  $("command").textContent = r.command + "\n" + r.cache_command;
  nextTable(r);
  const chips = el("p", { cls: "tokens", id: "tokens" });
  for (const tk of r.tokens) chips.append(el("code", { text: `${tk.id}: ${JSON.stringify(tk.text)}` }), " ");
  const grid = [figure(t("tokens"), chips)];
  if (r.sample) {
    const fig = figure(t("sample"), el("p", { id: "sampled" }, el("code", { text: JSON.stringify(r.sample.text) }),
      ` (id ${r.sample.id}, ${(100 * r.sample.prob).toFixed(2)}%)`));
    fig.append(r.sample.command ? el("code", { cls: "cmd", text: r.sample.command })
                                : el("p", { cls: "note", id: "no-cli", text: t("no_cli") }));
    grid.push(fig);
  }
  grid.push(embeddingsFigure(r), residualFigure(r), overlayFigure(r, show), ablateFigure(r, ablated, toggle));
  const heads = [...Array(r.heads).keys()].map((h) => `${t("head")} ${h}`);
  const last = r.attention[r.layer];
  const describe = (h, j) => `${t("head_w")} ${r.layer}.${h} → ${t("key")} ${j} ${JSON.stringify(r.tokens[j].text)}\n` +
                             `${t("weight")} ${fmt(last[h][j])}`;
  grid.push(figure(`${t("last_row")} (${t("layer")} ${r.layer})`,
    Object.assign(heatmap(last, { describe, cell: 16, rowLabels: heads, colLabels: r.tokens.map(tokenLabel),
                                  yTitle: t("heads"), xTitle: t("keys") }), { id: "last-row" })));
  const lens = el("tbody", { id: "lens" });
  for (const x of r.lens)
    lens.append(el("tr", {}, el("td", { text: `${t("layer")} ${x.layer}` }), el("td", { text: JSON.stringify(x.text) }),
                   el("td", { text: (100 * x.prob).toFixed(2) + "%" })));
  grid.push(figure(t("lens"), el("table", { cls: "shapes" }, lens)));
  $("grid").replaceChildren(...grid);
}

function embeddingsFigure(r) {
  const e = r.embeddings, labels = r.tokens.map(tokenLabel), posLabels = r.tokens.map((_, i) => String(i));
  const dims = `${t("dims")} 0–${e.dims - 1}`;
  const cell = (m, name) => (i, j) =>
      `${name} ${i} ${JSON.stringify(r.tokens[i].text)}, ${t("dims")} ${j}\n${fmt(m[i][j])}`;
  const tb = el("tbody", { id: "embed-norms" });
  r.tokens.forEach((tk, i) => tb.append(el("tr", {}, el("td", { text: `${i}: ${JSON.stringify(tk.text)}` }),
    el("td", { text: fmt(e.token_norm[i]) }), el("td", { text: fmt(e.position_norm[i]) }),
    el("td", { text: fmt(e.sum_norm[i]) }))));
  const table = el("table", { cls: "shapes" }, el("caption", { text: t("norms") }),
    el("thead", {}, el("tr", {}, ...["", t("norm_tok"), t("norm_pos"), t("norm_sum")].map((x) => el("th",
        { text: x })))),
    tb);
  const row = el("div", { cls: "row" },
    el("div", {}, el("figcaption", { text: t("wte") }),
       heatmap(e.token, { signed: true, cell: 12, rowLabels: labels, yTitle: t("tokens_axis"), xTitle: dims,
                          describe: cell(e.token, t("token")) })),
    el("div", {}, el("figcaption", { text: t("wpe") }),
       heatmap(e.position, { signed: true, cell: 12, rowLabels: posLabels, yTitle: t("positions"), xTitle: dims,
                             describe: cell(e.position, t("positions")) })),
    table);
  return figure(t("embeddings"), row);
}

function residualFigure(r) {
  const T = r.tokens.length, L = r.layers, last = T - 1;
  const tb = el("tbody", { id: "residual" });
  tb.append(el("tr", {}, el("td", { text: t("entering") }), el("td", { text: "" }), el("td", { text: "" }),
                el("td", { text: fmt(r.residual[0][last]) })));
  for (let l = 0; l < L; ++l)
    tb.append(el("tr", {}, el("td", { text: `${t("layer")} ${l}` }), el("td", { text: fmt(r.attn_out[l][last]) }),
      el("td", { text: r.mlp_out[l] === null ? "—" : fmt(r.mlp_out[l][last]) }),
      el("td", { text: fmt(r.residual[l + 1][last]) })));
  const table = el("table", { cls: "shapes" },
    el("thead", {}, el("tr", {}, ...["", t("attn_add"), t("mlp_add"), t("resid_after")].map((x) => el("th",
        { text: x })))),
    tb);
  const rows = [t("entering"), ...[...Array(L).keys()].map((l) => `${t("after")} ${l}`)];
  const describe = (i, j) =>
      `${rows[i]}, ${t("token")} ${j} ${JSON.stringify(r.tokens[j].text)}\n‖·‖ ${fmt(r.residual[i][j])}`;
  const map = heatmap(r.residual, { cell: 18, rowLabels: rows, colLabels: r.tokens.map(tokenLabel),
                                    yTitle: t("stream"), xTitle: t("tokens_axis"), describe });
  map.id = "residual-map";
  return figure(t("residual"), el("div", { cls: "row" }, table,
                                   el("div", {}, el("figcaption", { text: t("resid_map") }), map)));
}

function ablateFigure(r, ablated, toggle) {
  const heads = el("div", { id: "heads" });
  for (let l = 0; l < r.layers; ++l) {
    const row = el("div", {});
    for (let h = 0; h < r.heads; ++h) {
      const key = `${l}.${h}`;
      const b = el("button", { id: "head-" + key.replace(".", "-"), text: key, cls: ablated.has(key) ? "here" : "" });
      b.style.borderColor = headColour(h);
      b.addEventListener("click", () => toggle(key));
      row.append(b);
    }
    heads.append(row);
  }
  const fig = figure(t("ablate"), heads);
  if (r.ablated)
    fig.append(el("p", { id: "ablated", text: `${t("ablated_top")} ${JSON.stringify(r.ablated.top.text)} ` +
                         `(id ${r.ablated.top.id}, ${(100 * r.ablated.top.prob).toFixed(2)}%)` }),
               el("code", { cls: "cmd", text: r.ablated.command }));
  return fig;
}

// bertviz's head view: the tokens twice, queries on the left and keys on the right, a line from
// query i to key j for each head, in the head's colour, its opacity the weight (r.pattern: the
// layer's [H][T][T] weights); a legend to show one head or all; hovering a query keeps its lines.
function overlayFigure(r, show) {
  const NS = "http://www.w3.org/2000/svg";
  const svgEl = (tag, attrs) => {
    const e = document.createElementNS(NS, tag);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    return e;
  };
  const T = r.tokens.length, H = r.pattern.length, rowH = 18, W = 360, xl = 110, xr = W - 110;
  const svg = svgEl("svg", { id: "overlay", width: String(W), height: String(T * rowH + 30), role: "img" });
  const pick = el("select", { id: "layer" });
  for (let l = 0; l < r.layers; ++l) pick.append(el("option", { value: String(l), text: `${t("layer")} ${l}` }));
  pick.value = String(r.layer);
  pick.addEventListener("change", () => { window.attnLab.layer = Number(pick.value); show(); });
  const legend = el("div", { cls: "legend", id: "legend" });
  let focus = -1;  // the hovered query, -1: all
  const draw = () => {
    const head = window.attnLab.head;
    svg.replaceChildren();
    const y = (i) => 26 + i * rowH;
    const label = (x, i, anchor, side) => {
      const e = svgEl("text", { x: String(x), y: String(y(i) + 4), "text-anchor": anchor, "font-size": "12",
                                fill: side === "q" && focus === i ? "#000" : "#3b4252", class: "tok-" + side });
      e.textContent = tokenLabel(r.tokens[i]);
      if (side === "q") {
        e.addEventListener("mouseenter", () => { focus = i; draw(); });
        e.addEventListener("mouseleave", () => { focus = -1; draw(); });
      }
      return e;
    };
    const titles = [[xl - 8, t("queries"), "end"], [xr + 8, t("keys"), "start"]];
    for (const [x, s, a] of titles) {
      const e = svgEl("text", { x: String(x), y: "10", "text-anchor": a, "font-size": "11", "font-style": "italic",
          fill: "#5b6475" });
      e.textContent = s;
      svg.append(e);
    }
    for (let h = 0; h < H; ++h) {
      if (head >= 0 && head !== h) continue;
      for (let i = 0; i < T; ++i) {
        if (focus >= 0 && focus !== i) continue;
        for (let j = 0; j < T; ++j) {
          const w = r.pattern[h][i][j];
          if (w < 0.01) continue;
          svg.append(svgEl("line", { x1: String(xl), y1: String(y(i)), x2: String(xr), y2: String(y(j)),
                                     stroke: headColour(h), "stroke-width": "2.5", "stroke-opacity": w.toFixed(3),
                                     "data-head": String(h), "data-weight": String(w) }));
        }
      }
    }
    for (let i = 0; i < T; ++i) svg.append(label(xl - 8, i, "end", "q"), label(xr + 8, i, "start", "k"));
    legend.replaceChildren();
    const item = (h, text) => {
      const b = el("button", { cls: head === h ? "here" : "", id: h < 0 ? "head-all" : `overlay-head-${h}` });
      if (h >= 0) { const sw = el("span", { cls: "swatch" }); sw.style.background = headColour(h); b.append(sw); }
      b.append(text);
      b.addEventListener("click", () => { window.attnLab.head = h; draw(); });
      return b;
    };
    legend.append(item(-1, t("all_heads")));
    for (let h = 0; h < H; ++h) legend.append(item(h, `${t("head")} ${h}`));
  };
  if (window.attnLab.head >= H) window.attnLab.head = -1;
  draw();
  return figure(t("overlay"), el("p", {}, pick, " ", el("span", { cls: "note", text: t("hover_query") })), legend, svg);
}

// ---- the exercise page: the exercises of `attn exercise`. The inputs come from the server
// (POST /api/exercise, base64 of inputs.npz); an uploaded answer goes back as base64 (POST
// /api/exercise/check) and the server grades it as `attn exercise N --check` does.
Object.assign(I18N.en, {
  exercise: "exercise", download: "Download inputs.npz", answer_file: "your answer (.npy or .npz)",
  check: "Check", stage: "stage", status: "status", your_shape: "your shape", expected: "expected shape",
  max_diff: "max |diff|", stage_table: "Your answer, stage by stage", diagnosis: "Diagnosis", hint: "Hint",
  pass: "pass: every stage matches the reference", not_yet: "not yet: the first stage that diverges is",
  no_diag: "no known mistake reproduces it", task_text: "The task (task.md)", lesson: "lesson",
  file_too_big: "the file has {got} bytes; the lab takes at most {max}", no_file: "choose a file first",
  same_check: "The same check in your terminal:",
});
Object.assign(I18N.zh, {
  exercise: "练习", download: "下载 inputs.npz", answer_file: "你的答案（.npy 或 .npz）",
  check: "检查", stage: "阶段", status: "结果", your_shape: "你的形状", expected: "应有的形状",
  max_diff: "最大 |差|", stage_table: "你的答案，逐阶段比较", diagnosis: "诊断", hint: "提示",
  pass: "通过：每个阶段都与参考实现一致", not_yet: "还没有：第一个出现偏差的阶段是",
  no_diag: "没有已知的错误能重现它", task_text: "任务（task.md）", lesson: "课",
  file_too_big: "文件有 {got} 字节；实验室最多接受 {max} 字节", no_file: "请先选择文件",
  same_check: "在终端里做同样的检查：",
});

function bytesToBase64(bytes) {
  let s = "";
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
  return btoa(s);
}

function exercise() {
  const maxAnswer = Number(document.body.dataset.maxAnswer);
  const pick = el("select", { id: "exercise" });
  const seed = el("input", { type: "number", id: "seed", min: "0", value: "0" });
  const download = el("a", { id: "download", href: "#", download: "inputs.npz", text: t("download") });
  const file = el("input", { type: "file", id: "answer", accept: ".npy,.npz" });
  const go = el("button", { id: "check", text: t("check") });
  $("knobs").append(knob(t("exercise"), pick), knob(t("seed"), seed), download, knob(t("answer_file"), file), go);
  let serial = 0, url = "";
  window.attnLab = {};
  const load = async () => {
    const mine = ++serial;
    setStatus(t("computing"));
    try {
      const r = await api("/api/exercise", { exercise: Number(pick.value) || 1, seed: Number(seed.value) || 0 });
      if (mine !== serial) return;
      if (!pick.options.length)
        for (const x of r.exercises)
          pick.append(el("option", { value: String(x.number),
                                     text: `${x.number}. ${x.title} (${t("lesson")} ${x.lesson})` }));
      pick.value = String(r.exercise.number);
      const raw = Uint8Array.from(atob(r.inputs), (c) => c.charCodeAt(0));
      if (url) URL.revokeObjectURL(url);
      url = URL.createObjectURL(new Blob([raw], { type: "application/octet-stream" }));
      download.href = url;
      window.attnLab.exercise = r;
      $("command").textContent = r.command;
      $("shapes").replaceChildren();
      $("grid").replaceChildren(figure(t("task_text"), el("pre", { id: "task", text: r.task })));
      setStatus("");
      document.body.dataset.ready = String(mine);
    } catch (e) { if (mine === serial) setStatus(e.message, true); }
  };
  const check = async () => {
    const f = file.files[0];
    if (!f) { setStatus(t("no_file"), true); return; }
    if (f.size > maxAnswer) {
      setStatus(t("file_too_big").replace("{got}", f.size).replace("{max}", maxAnswer), true);
      return;
    }
    const mine = ++serial;
    setStatus(t("computing"));
    try {
      const bytes = new Uint8Array(await f.arrayBuffer());
      const r = await api("/api/exercise/check", { exercise: Number(pick.value) || 1, seed: Number(seed.value) || 0,
                                                   answer: bytesToBase64(bytes) });
      if (mine !== serial) return;
      window.attnLab.check = r;
      drawCheck(r);
      setStatus("");
      document.body.dataset.ready = String(mine);
    } catch (e) { if (mine === serial) setStatus(e.message, true); }
  };
  pick.addEventListener("change", load);
  seed.addEventListener("change", load);
  file.addEventListener("change", check);
  go.addEventListener("click", check);
  load();
}

function drawCheck(r) {
  const c = r.check;
  $("command").textContent = `${t("same_check")}\n${r.command}`;
  const tb = el("tbody");
  for (const st of c.stages)
    tb.append(el("tr", { cls: st.status }, el("td", { text: st.name }), el("td", { text: st.status }),
      el("td", { text: JSON.stringify(st.shape) }), el("td", { text: JSON.stringify(st.expected_shape) }),
      el("td", { text: st.max_abs_diff === null ? "—" : Number(st.max_abs_diff).toExponential(2) })));
  $("shapes").replaceChildren(el("caption", { text: t("stage_table") }),
    el("thead", {}, el("tr", {}, el("th", { text: t("stage") }), el("th", { text: t("status") }),
      el("th", { text: t("your_shape") }), el("th", { text: t("expected") }), el("th", { text: t("max_diff") }))), tb);
  const verdict = el("p", { id: "verdict", text: r.pass ? t("pass") : `${t("not_yet")} ${c.first_divergence}` });
  const diag = el("ul", { id: "diagnosis" });
  for (const d of c.diagnosis) diag.append(el("li", {}, el("code", { text: d.id }), ": " + d.text));
  if (!r.pass && !c.diagnosis.length) diag.append(el("li", { text: t("no_diag") }));
  const grid = [figure(t("diagnosis"), verdict, diag)];
  if (r.hint) grid.push(figure(t("hint"), el("p", { id: "hint", text: r.hint })));
  const task = $("task");
  if (task) grid.push(task.parentNode);
  $("grid").replaceChildren(...grid);
}

const pages = { playground, "sqrt-dk": sqrtDk, sentence, train, decoder, exercise };
const page = document.body.dataset.page;
if (pages[page]) pages[page]();
