// attn serve: the script of the lab's pages. Every number drawn here comes from
// attn's C++ library through the JSON API of this same server (/api/...); the
// script only draws. Strings from the server or the user are set with
// textContent, never parsed as markup.
"use strict";

const LANG = document.documentElement.lang === "zh" ? "zh" : "en";
const I18N = {
  en: {
    seq: "T (tokens)", d_k: "Dk (per head)", heads: "heads", scale: "scale", tau: "cosine τ", temperature: "temperature",
    mask: "mask", keep: "keys kept (padding)", window: "window (keys)", seed: "seed", show: "show head",
    sqrt: "1/√Dk", none: "1 (none)", inv_dk: "1/Dk", cosine: "cosine / τ",
    m_none: "none", m_padding: "padding", m_causal: "causal", m_window: "causal window",
    same: "The same numbers in your terminal:", shapes: "Shapes, in the order the forward pass makes them",
    step: "step", tensor: "tensor", formula: "formula", shape: "shape",
    Q: "Q of head", K: "K of head", V: "V of head", scores: "scores (scaled, masked) of head", weights: "weights of head",
    rows_sum: "every row of the weights sums to 1: max |sum − 1| =", computing: "computing…",
    query: "query", key: "key", weight: "weight", score: "score", masked: "masked", value: "value", row: "row", col: "column",
    dk: "Dk", unscaled: "unscaled q·k", scaled: "scaled q·k / √Dk", std: "std of the scores", theory: "theory",
    maxw: "mean max weight of a row (64 keys)", onehot: "rows with max weight > 0.99", jac: "mean ‖∂softmax/∂z‖ (gradient through softmax)",
    hist: "histogram of q·k (2048 draws; axis ±4 theory std)", example: "one softmax row of 16 scores: weights",
    text: "your sentence", show_heads: "Show the heads", task: "task", steps: "steps", start: "Start training", stop: "Stop",
    loss: "training loss", acc: "accuracy", head_w: "weights of head", last_layer: "of the last layer on an eval row",
    done: "done", stopped: "stopped", eval: "eval", busy: "busy", error: "error",
    empty: "type a sentence first", too_long: "the sentence has {got} bytes; the lab takes at most {max}",
    prompt: "your prompt", next_dist: "Next token", tokens: "tokens (id: text)", rank: "rank", id: "id",
    prob: "probability", logit: "logit", token: "token", prob_t: "at temperature", sample: "Sample the next token",
    greedy: "0 = greedy", ablate: "Click a head (layer.head) to ablate it (its output set to 0)",
    ablated_top: "with the ablated heads the next token is", layer: "layer",
    last_query: "every head's weights of the last query (it predicts the next token) over the tokens, layer",
    lens: "logit lens: the top next token read off the residual stream after each layer (through LN_f and the head)",
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
  const r = await fetch(path, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
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

// A heatmap of a matrix (rows of numbers, null = masked) on a canvas. Colour: the
// value on [lo, hi] (weights: [0, 1]; signed data: blue below 0, red above).
// describe(i, j) gives the hover text of a cell.
function heatmap(m, opts) {
  const rows = m.length, cols = rows ? m[0].length : 0;
  const cell = Math.max(4, Math.min(opts.cell || 22, Math.floor(360 / Math.max(rows, cols))));
  // Token labels (opts.labels) on the left of the rows and above the columns.
  const pad = opts.labels ? 46 : 0;
  const c = el("canvas", { width: String(pad + cols * cell), height: String(pad + rows * cell) });
  c.dataset.rows = rows; c.dataset.cols = cols; c.dataset.cell = cell; c.dataset.left = pad; c.dataset.top = pad;
  const g = c.getContext("2d");
  if (opts.labels) {
    g.fillStyle = "#5b6475"; g.font = `${Math.min(12, cell - 2)}px sans-serif`; g.textBaseline = "middle";
    const short = (s) => (s.length > 6 ? s.slice(0, 5) + "…" : s);
    g.textAlign = "right";
    for (let i = 0; i < rows; ++i) g.fillText(short(opts.labels[i]), pad - 4, pad + (i + 0.5) * cell);
    for (let j = 0; j < cols; ++j) {
      g.save(); g.translate(pad + (j + 0.5) * cell, pad - 4); g.rotate(-Math.PI / 2); g.textAlign = "left";
      g.fillText(short(opts.labels[j]), 0, 0); g.restore();
    }
  }
  let amax = 0;
  for (const r of m) for (const v of r) if (v !== null) amax = Math.max(amax, Math.abs(v));
  for (let i = 0; i < rows; ++i)
    for (let j = 0; j < cols; ++j) {
      const v = m[i][j], x = pad + j * cell, y = pad + i * cell;
      if (v === null || (opts.allowed && !opts.allowed[i][j])) {
        g.fillStyle = "#e8e8ec"; g.fillRect(x, y, cell, cell);
        g.strokeStyle = "#b8b8c0"; g.beginPath(); g.moveTo(x, y); g.lineTo(x + cell, y + cell); g.stroke();
        continue;
      }
      if (opts.signed) {
        const a = amax > 0 ? Math.abs(v) / amax : 0;
        g.fillStyle = v >= 0 ? `rgba(200,40,40,${a})` : `rgba(40,80,200,${a})`;
      } else {
        const a = Math.max(0, Math.min(1, v));
        g.fillStyle = `rgba(43,89,195,${a})`;
      }
      g.fillRect(x, y, cell, cell);
    }
  c.addEventListener("mousemove", (ev) => {
    const b = c.getBoundingClientRect();
    const j = Math.floor((ev.clientX - b.left - pad) / cell), i = Math.floor((ev.clientY - b.top - pad) / cell);
    if (i < 0 || j < 0 || i >= rows || j >= cols) return hideTip();
    showTip(ev, opts.describe(i, j));
  });
  c.addEventListener("mouseleave", hideTip);
  return c;
}

function figure(caption, ...kids) { return el("figure", {}, el("figcaption", { text: caption }), ...kids); }

function knob(label, input, out) {
  const l = el("label", {}, el("span", { text: label + " " }, out || null), input);
  return l;
}
function range(id, min, max, value, step) {
  return el("input", { type: "range", id, min: String(min), max: String(max), value: String(value), step: String(step || 1) });
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
    knob(t("scale"), select("scale", [["sqrt", t("sqrt")], ["none", t("none")], ["inv_dk", t("inv_dk")], ["cosine", t("cosine")]], "sqrt")),
    knob(t("tau"), range("tau", 0.05, 2, 1, 0.05), o("tau")),
    knob(t("temperature"), range("temperature", -3, 3, 0, 0.1), o("temperature")),
    knob(t("mask"), select("mask", [["none", t("m_none")], ["padding", t("m_padding")], ["causal", t("m_causal")], ["window", t("m_window")]], "none")),
    knob(t("keep"), range("keep", 0, 8, 6), o("keep")),
    knob(t("window"), range("window", 1, 8, 3), o("window")),
    knob(t("seed"), el("input", { type: "number", id: "seed", min: "0", value: "0" })),
    knob(t("show"), range("show", 0, 1, 0), o("show")));
  const temperature = () => Math.pow(2, Number($("temperature").value));
  const request = () => ({
    seq: Number($("seq").value), d_k: Number($("d_k").value), heads: Number($("heads").value),
    scale: $("scale").value, tau: Number($("tau").value), temperature: Number(temperature().toPrecision(6)),
    mask: $("mask").value, keep: Number($("keep").value), window: Number($("window").value), seed: Number($("seed").value) || 0,
  });
  let serial = 0;
  const update = async () => {
    const T = Number($("seq").value);
    for (const id of ["keep", "window"]) { $(id).max = String(T); if (Number($(id).value) > T) $(id).value = String(T); }
    $("show").max = String(Number($("heads").value) - 1);
    if (Number($("show").value) > Number($("show").max)) $("show").value = $("show").max;
    for (const id of Object.keys(outs)) outs[id].textContent = id === "temperature" ? temperature().toPrecision(3) : $(id).value;
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
  for (const s of r.shapes) tb.append(el("tr", {}, el("td", { text: s.name }), el("td", { text: s.formula }), el("td", { text: s.shape })));
  $("shapes").replaceChildren(el("caption", { text: t("shapes") }),
    el("thead", {}, el("tr", {}, el("th", { text: t("tensor") }), el("th", { text: t("formula") }), el("th", { text: t("shape") }))), tb);
  const T = r.config.seq, dk = r.config.d_k;
  const vec = (name) => (i, j) => `${name}[${t("row")} ${i}, ${t("col")} ${j}] = ${fmt(r[name.toLowerCase()][h][i][j])}`;
  const pair = (i, j) => {
    const allowed = r.allowed[i][j] === 1;
    return `${t("query")} ${i} → ${t("key")} ${j}\n${t("score")} ${allowed ? fmt(r.scores[h][i][j]) : "−∞ (" + t("masked") + ")"}\n` +
           `${t("weight")} ${fmt(r.weights[h][i][j])}`;
  };
  const grid = $("grid");
  grid.replaceChildren(
    figure(`${t("Q")} ${h} [${T}, ${dk}]`, heatmap(r.q[h], { signed: true, describe: vec("Q"), cell: 14 })),
    figure(`${t("K")} ${h} [${T}, ${dk}]`, heatmap(r.k[h], { signed: true, describe: vec("K"), cell: 14 })),
    figure(`${t("V")} ${h} [${T}, ${dk}]`, heatmap(r.v[h], { signed: true, describe: vec("V"), cell: 14 })),
    figure(`${t("scores")} ${h} [${T}, ${T}]`, heatmap(r.scores[h], { signed: true, allowed: r.allowed, describe: pair })),
    figure(`${t("weights")} ${h} [${T}, ${T}]`, Object.assign(heatmap(r.weights[h], { allowed: r.allowed, describe: pair }), { id: "weights" })));
}

// ---- /sqrt-dk
function sqrtDk() {
  const out = el("output", { id: "dk_out" });
  $("knobs").append(knob(t("dk"), range("dk", 0, 12, 6), out), knob(t("seed"), el("input", { type: "number", id: "seed", min: "0", value: "0" })));
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
  const line = (label, a, b) => tb.append(el("tr", {}, el("td", { text: label }), el("td", { text: a }), el("td", { text: b })));
  line(t("std"), `${fmt(u.std, 3)} (${t("theory")} ${fmt(u.theory_std, 3)})`, `${fmt(s.std, 3)} (${t("theory")} ${fmt(s.theory_std, 3)})`);
  line(t("maxw"), fmt(u.mean_max_weight, 3), fmt(s.mean_max_weight, 3));
  line(t("onehot"), (100 * u.onehot_fraction).toFixed(1) + "%", (100 * s.onehot_fraction).toFixed(1) + "%");
  line(t("jac"), fmt(u.mean_jacobian_norm, 4), fmt(s.mean_jacobian_norm, 4));
  $("shapes").replaceChildren(el("thead", {}, el("tr", {}, el("th", { text: "" }), el("th", { text: t("unscaled") }), el("th", { text: t("scaled") }))), tb);
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
  const frame = el("iframe", { id: "view", title: "attention" });
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
  $("knobs").append(knob(t("task"), task), knob(t("steps"), steps), knob(t("seed"), seed), knob(t("show"), head), start, stop);
  let ctrl = null, losses = [], tokens = [];
  const finish = (text, bad, abort) => {
    if (ctrl && abort) ctrl.abort();
    ctrl = null; start.disabled = false; stop.disabled = true; setStatus(text, bad);
  };
  const onEvent = (e) => {
    window.attnLab.train.push(e);
    if (e.event === "start") { tokens = e.tokens; $("command").textContent = e.command; }
    if (e.event === "progress") losses.push(e.loss);
    if (e.event === "error") return finish(t("error") + ": " + e.error, true);
    drawTraining(e, losses, tokens, Number(head.value));
    if (e.event === "progress")
      setStatus(`${t("step")} ${e.step}/${e.steps}  ${t("loss")} ${fmt(e.loss, 3)}  ${t("acc")} ${(100 * e.accuracy).toFixed(1)}%` +
                (e.eval ? `  ${t("eval")} ${(100 * e.eval.accuracy).toFixed(1)}%` : ""));
    if (e.event === "done")
      finish(`${e.stopped ? t("stopped") : t("done")}: ${e.steps_done} ${t("steps")}, ${t("eval")} ${t("acc")} ${(100 * e.eval.accuracy).toFixed(1)}%`);
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
  const curve = el("canvas", { width: "420", height: "200", id: "curve" });
  const g = curve.getContext("2d");
  if (losses.length > 1) {
    const top = Math.max(...losses), n = losses.length;
    g.strokeStyle = "#2b59c3"; g.beginPath();
    losses.forEach((v, i) => { const x = (i / (n - 1)) * 410 + 5, y = 195 - (v / top) * 185; i ? g.lineTo(x, y) : g.moveTo(x, y); });
    g.stroke();
    g.fillStyle = "#5b6475"; g.font = "11px sans-serif"; g.fillText(fmt(top, 2), 4, 12); g.fillText("0", 4, 196);
  }
  const w = e.weights;
  const describe = (i, j) => `${t("query")} ${i} (${tokens[i]}) → ${t("key")} ${j} (${tokens[j]})\n${t("weight")} ${fmt(w[i][j])}`;
  $("grid").replaceChildren(figure(t("loss"), curve),
    figure(`${t("head_w")} ${h} ${t("last_layer")}`, heatmap(w, { describe, cell: 18, labels: tokens })));
}

// ---- /decoder
// The prompt's tokens and the next-token distribution, from POST /api/decoder (the numbers of
// `attn model next --json`, whose command the page prints).
function decoder() {
  const maxBytes = Number(document.body.dataset.maxText);
  const input = el("input", { type: "text", id: "prompt", maxlength: String(maxBytes), value: "To be, or not to b" });
  const go = el("button", { id: "go", text: t("next_dist") });
  const temp = el("input", { type: "number", id: "temperature", min: "0", max: "100", step: "0.05", value: "1" });
  const seed = el("input", { type: "number", id: "seed", min: "0", value: "0" });
  const sample = el("button", { id: "sample", text: t("sample") });
  $("knobs").append(knob(t("prompt"), input), go, knob(`${t("temperature")} (${t("greedy")})`, temp),
                    knob(t("seed"), seed), sample);
  let serial = 0;
  const ablated = new Set();  // "layer.head"
  const toggle = (key) => { if (ablated.has(key)) ablated.delete(key); else ablated.add(key); show(); };
  window.attnLab = { toggleHead: toggle };
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
                                            seed: Number(seed.value) || 0,
                                            ablate: [...ablated].map((k) => k.split(".").map(Number)) });
      if (mine !== serial) return;
      window.attnLab = Object.assign(window.attnLab || {}, { decoder: r });
      drawDecoder(r, ablated, toggle);
      setStatus("");
      document.body.dataset.ready = String(mine);
    } catch (e) { if (mine === serial) setStatus(e.message, true); }
  };
  go.addEventListener("click", show);
  input.addEventListener("keydown", (e) => { if (e.key === "Enter") show(); });
  temp.addEventListener("change", show);
  seed.addEventListener("change", show);
  // The token `attn model generate --steps 1 --temperature T --seed S` chooses, appended.
  sample.addEventListener("click", () => {
    const r = window.attnLab && window.attnLab.decoder;
    if (!r || !r.sample) return;
    window.attnLab.sampled = r.sample;
    input.value += r.sample.text;
    show();
  });
  show();
}

function drawDecoder(r, ablated, toggle) {
  $("command").textContent = r.command;
  const chips = el("p", { cls: "tokens", id: "tokens" });
  for (const tk of r.tokens) chips.append(el("code", { text: `${tk.id}: ${JSON.stringify(tk.text)}` }), " ");
  const tb = el("tbody");
  for (const n of r.next) {
    const bar = el("span", { cls: "bar" });
    bar.style.display = "inline-block"; bar.style.height = "0.8em"; bar.style.background = "#2b59c3";
    bar.style.width = Math.round(200 * n.prob) + "px";
    tb.append(el("tr", {}, el("td", { text: String(n.rank) }), el("td", { text: String(n.id) }),
      el("td", { text: JSON.stringify(n.text) }), el("td", { text: (100 * n.prob).toFixed(2) + "%" }, " ", bar),
      el("td", { text: n.logit.toFixed(4) }),
      el("td", { text: r.next_at_temperature[n.rank - 1] === null ? "—"
                                                                   : (100 * r.next_at_temperature[n.rank - 1]).toFixed(2) + "%" })));
  }
  $("shapes").replaceChildren(el("caption", { text: t("next_dist") }),
    el("thead", {}, el("tr", {}, el("th", { text: t("rank") }), el("th", { text: t("id") }), el("th", { text: t("token") }),
      el("th", { text: t("prob") }), el("th", { text: t("logit") }),
      el("th", { text: `${t("prob_t")} ${r.temperature}` }))), tb);
  const grid = [figure(t("tokens"), chips)];
  if (r.sample) grid.push(figure(t("sample"), el("p", {}, el("code", { text: JSON.stringify(r.sample.text) }),
    ` (id ${r.sample.id}, ${(100 * r.sample.prob).toFixed(2)}%)`), el("code", { cls: "cmd", text: r.sample.command })));
  const heads = el("div", { id: "heads" });
  for (let l = 0; l < r.layers; ++l) {
    const row = el("div", {});
    for (let h = 0; h < r.heads; ++h) {
      const key = `${l}.${h}`;
      const b = el("button", { id: "head-" + key.replace(".", "-"), text: key, cls: ablated.has(key) ? "here" : "" });
      if (ablated.has(key)) b.style.background = "#c0392b", b.style.color = "white";
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
  grid.push(fig);
  // All heads of a layer: one row per head, one column per token (the last query's weights).
  const pick = el("select", { id: "layer" });
  for (let l = 0; l < r.layers; ++l) pick.append(el("option", { value: String(l), text: `${t("layer")} ${l}` }));
  pick.value = String(window.attnLab.layer || 0);
  const holder = el("div", {});
  const drawLayer = () => {
    const l = Number(pick.value), w = r.attention[l];
    window.attnLab.layer = l;
    const describe = (h, j) => `${t("head_w")} ${l}.${h} → ${t("key")} ${j} ${JSON.stringify(r.tokens[j].text)}\n` +
                               `${t("weight")} ${fmt(w[h][j])}`;
    holder.replaceChildren(heatmap(w, { describe, cell: 16 }));
  };
  pick.addEventListener("change", drawLayer);
  drawLayer();
  grid.push(figure(`${t("last_query")}`, pick, holder));
  const lens = el("tbody", { id: "lens" });
  for (const x of r.lens)
    lens.append(el("tr", {}, el("td", { text: `${t("layer")} ${x.layer}` }), el("td", { text: JSON.stringify(x.text) }),
                   el("td", { text: (100 * x.prob).toFixed(2) + "%" })));
  grid.push(figure(t("lens"), el("table", { cls: "shapes" }, lens)));
  $("grid").replaceChildren(...grid);
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
