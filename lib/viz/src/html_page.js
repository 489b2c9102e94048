// The --html attention page's script, inline in every page that attention_html writes (the
// CSP admits it by its SHA-256). It reads the JSON data block (id attn-data) and draws the three
// views; every string from the data reaches the DOM through textContent, a property (title) or
// canvas fillText, never as markup or through an attribute that holds markup. No request of any
// kind, no image or font load: the page's CSP forbids them (and tests/test_html.cpp checks this
// file names none of the APIs that would).
// (a classic script, not one function: the page holds nothing else, so its names are the page's own)
'use strict';
var T0 = performance.now();
var D = JSON.parse(document.getElementById('attn-data').textContent);
var TXT = {
  en: {
    head: 'Head view', model: 'Model view', matrix: 'Matrix view', layer: 'Layer', headsel: 'Head',
    scale: 'Colour scale', absolute: 'absolute', perrow: 'per row', log: 'log', show: 'Show',
    weight: 'weights \u03b1', norm: '\u2016\u03b1\u00b7v\u2016 (norm-based)', shapes: 'Tensor shapes',
    query: 'query', key: 'key', score: 'score', weightw: 'weight', normw: '\u2016\u03b1\u00b7v\u2016',
    mask: 'mask', masked: 'masked (the query may not attend to this key)', allowed: 'allowed',
    entropy: 'entropy', sink: 'sink', noscore: 'not embedded at this size',
    enc16: 'Weights are stored as float16; the largest error of any weight in this page is ',
    enc8: 'Weights are stored in 8 bits on a square-root scale (w = (q/255)\u00b2); the largest error of any weight ' +
        'in this page is ',
    nonorm: 'The norm-based view needs the value vectors, which this source does not carry.',
    headhelp: 'Left: queries; right: keys. A line\u2019s opacity is the weight (on the colour scale chosen above), ' +
      'one colour a head. Hover a token to isolate its row (a query) or its column (a key); keys a query may not ' +
      'see are struck through. Click a head in the legend to show it alone or with the others.',
    allheads: 'all heads', thumbhelp: 'rows: queries, columns: keys; colour: the largest weight a cell merges',
    queries: 'queries', keys: 'keys', noscoresrc: 'not computed by this command', batch: 'Batch row',
    sqrtmid: 'square-root scale: the middle is 0.25',
    modelhelp: 'Every layer \u00d7 head: mean normalised entropy (1 = uniform, 0 = one key) and sink share (the mean ' +
        'weight of the key that receives the most). Click a thumbnail to enlarge it.',
    matrixhelp: 'Rows are queries, columns keys. Hover a cell for its numbers; hatched cells are masked.',
    source: 'Source: ', topkey: 'top key', L: 'L', H: 'H', min: '0', max: 'max'
  },
  zh: {
    head: '\u5934\u89c6\u56fe', model: '\u6a21\u578b\u89c6\u56fe', matrix: '\u77e9\u9635\u89c6\u56fe',
        layer: '\u5c42', headsel: '\u5934',
    scale: '\u8272\u6807', absolute: '\u7edd\u5bf9', perrow: '\u6309\u884c', log: '\u5bf9\u6570', show: '\u663e\u793a',
    weight: '\u6743\u91cd \u03b1', norm: '\u2016\u03b1\u00b7v\u2016\uff08\u8303\u6570\uff09',
        shapes: '\u5f20\u91cf\u5f62\u72b6',
    query: '\u67e5\u8be2', key: '\u952e', score: '\u5206\u6570', weightw: '\u6743\u91cd',
        normw: '\u2016\u03b1\u00b7v\u2016',
    mask: '\u63a9\u7801',
        masked: '\u5df2\u5c4f\u853d\uff08\u8be5\u67e5\u8be2\u4e0d\u80fd\u770b\u5230\u8fd9\u4e2a\u952e\uff09',
        allowed: '\u5141\u8bb8',
    entropy: '\u71b5', sink: '\u6c47\u805a', noscore: '\u6b64\u89c4\u6a21\u672a\u5d4c\u5165',
    enc16: '\u6743\u91cd\u4ee5 float16 \u5b58\u50a8\uff1b\u672c\u9875\u4efb\u4e00\u6743\u91cd\u7684\u6700\u5927' +
        '\u8bef\u5dee\u4e3a ',
    enc8: '\u6743\u91cd\u4ee5\u5e73\u65b9\u6839\u523b\u5ea6\u7684 8 \u4f4d\u5b58\u50a8\uff08w = (q/255)\u00b2\uff09' +
        '\uff1b\u672c\u9875\u4efb\u4e00\u6743\u91cd\u7684\u6700\u5927\u8bef\u5dee\u4e3a ',
    nonorm: '\u8303\u6570\u89c6\u56fe\u9700\u8981\u503c\u5411\u91cf\uff0c\u6b64\u6765\u6e90\u672a\u63d0\u4f9b\u3002',
    headhelp: '\u5de6\uff1a\u67e5\u8be2\uff1b\u53f3\uff1a\u952e\u3002\u7ebf\u7684\u4e0d\u900f\u660e\u5ea6' +
      '\u5373\u6743\u91cd\uff08\u6309\u4e0a\u9762\u9009\u7684\u8272\u6807\uff09\uff0c\u6bcf\u4e2a\u5934' +
      '\u4e00\u79cd\u989c\u8272\u3002\u60ac\u505c\u5728\u8bcd\u5143\u4e0a\u53ef\u5355\u72ec\u663e\u793a' +
      '\u5176\u884c\uff08\u67e5\u8be2\uff09\u6216\u5217\uff08\u952e\uff09\uff1b\u67e5\u8be2\u770b\u4e0d' +
      '\u5230\u7684\u952e\u663e\u793a\u5220\u9664\u7ebf\u3002\u70b9\u51fb\u56fe\u4f8b\u4e2d\u7684\u5934' +
      '\u53ef\u5355\u72ec\u663e\u793a\u6216\u4e0e\u5176\u4ed6\u5934\u4e00\u8d77\u663e\u793a\u3002',
    allheads: '\u6240\u6709\u5934', thumbhelp: '\u884c\uff1a\u67e5\u8be2\uff0c\u5217\uff1a\u952e\uff1b' +
      '\u989c\u8272\uff1a\u5355\u5143\u683c\u5408\u5e76\u7684\u6700\u5927\u6743\u91cd',
    queries: '\u67e5\u8be2', keys: '\u952e', noscoresrc: '\u6b64\u547d\u4ee4\u672a\u8ba1\u7b97',
    batch: '\u6279\u6b21\u884c',
    sqrtmid: '\u5e73\u65b9\u6839\u523b\u5ea6\uff1a\u4e2d\u70b9\u4e3a 0.25',
    modelhelp: '\u6bcf\u4e00\u5c42 \u00d7 \u6bcf\u4e2a\u5934\uff1a\u5e73\u5747\u5f52\u4e00\u5316\u71b5\uff081 = ' +
        '\u5747\u5300\uff0c0 = \u53ea\u770b\u4e00\u4e2a\u952e\uff09\u4e0e\u6c47\u805a\u5360\u6bd4\uff08\u6536\u5230' +
        '\u6700\u591a\u7684\u952e\u7684\u5e73\u5747\u6743\u91cd\uff09\u3002\u70b9\u51fb\u7f29\u7565\u56fe\u653e' +
        '\u5927\u3002',
    matrixhelp: '\u884c\u662f\u67e5\u8be2\uff0c\u5217\u662f\u952e\u3002\u60ac\u505c\u5728\u5355\u5143\u683c\u4e0a' +
        '\u67e5\u770b\u6570\u503c\uff1b\u659c\u7ebf\u5355\u5143\u683c\u5df2\u5c4f\u853d\u3002',
    source: '\u6765\u6e90\uff1a', topkey: '\u6700\u591a\u7684\u952e', L: '\u5c42', H: '\u5934', min: '0',
        max: '\u6700\u5927'
  }
};
var T = TXT[D.lang] || TXT.en;
var Tq = D.Tq, Tk = D.Tk, NL = D.L, NH = D.H, N = Tq * Tk;

// ---- data
function bytes(b64) {
  var s = atob(b64), u = new Uint8Array(s.length);
  for (var i = 0; i < s.length; i++) u[i] = s.charCodeAt(i);
  return u;
}
var HALF = new Float32Array(65536);
(function () {
  for (var h = 0; h < 65536; h++) {
    var sg = (h & 0x8000) ? -1 : 1, e = (h >> 10) & 31, m = h & 1023;
    HALF[h] = e === 0 ? sg * m * 5.960464477539063e-8
            : e === 31 ? (m ? NaN : sg * Infinity) : sg * (1 + m / 1024) * Math.pow(2, e - 15);
  }
})();
function f16(u, off, n) {
  var out = new Float32Array(n);
  for (var i = 0; i < n; i++) { var b = 2 * (off + i); out[i] = HALF[u[b] | (u[b + 1] << 8)]; }
  return out;
}
var U8 = new Float32Array(256); for (var q = 0; q < 256; q++) U8[q] = (q / 255) * (q / 255);
// each head's weights (and scores) sit in their own data element, decoded only when the head is shown
var MB = D.mask ? bytes(D.mask.bits) : null;
var NB = D.B || 1;  // batch rows: layer l of row S.b is the data's layer S.b * NL + l
var VN = D.vn ? f16(bytes(D.vn), 0, NB * NL * NH * Tk) : null;
function slot(l, h) { return (S.b * NL + l) * NH + h; }
function block(kind, l, h) { return bytes(document.getElementById('attn-' + kind + '-' + slot(l, h)).textContent); }
function headW(l, h) {
  var b = block('w', l, h);
  if (D.enc === 'f16') return f16(b, 0, N);
  var out = new Float32Array(N); for (var i = 0; i < N; i++) out[i] = U8[b[i]]; return out;
}
function allowed(h, i, j) {
  if (!MB) return true;
  var idx = ((S.b * D.mask.heads + (D.mask.heads === 1 ? 0 : h)) * Tq + i) * Tk + j;
  return ((MB[idx >> 3] >> (idx & 7)) & 1) === 1;
}
function qtok(i) { return D.q.length ? D.q[i] : String(i); }
function ktok(j) { return D.k.length ? D.k[j] : String(j); }

// ---- state: the selected head, its weights, scores and (norm view) values; over 64 keys the weights
// are small (about 1/Tk), so the matrix starts on the per-row scale
var S = { b: 0, l: 0, h: 0,
          view: NL * NH > 1 ? 'model' : 'head', scale: Tk > 64 ? 'perrow' : 'absolute', value: 'weight',
          w: null, s: null, v: null, vmax: 1, rowmax: null, focus: null, layer: null, shown: null };
var parsed = false;  // the heads' data elements are in the DOM
function reload() { if (parsed) load(); redraw(); }
// One head's values as the views draw them: the weights, or w * ||v_j|| (norm view), their largest
// value and each row's largest (the per-row scale).
function headValues(l, h) {
  var w = headW(l, h), v = w;
  if (S.value === 'norm' && VN) {
    v = new Float32Array(N);
    var base = slot(l, h) * Tk;
    for (var i = 0; i < Tq; i++) for (var j = 0; j < Tk; j++) v[i * Tk + j] = w[i * Tk + j] * VN[base + j];
  }
  var vmax = 0, rowmax = new Float32Array(Tq);
  for (var r = 0; r < Tq; r++) for (var c = 0; c < Tk; c++) {
    var x = v[r * Tk + c]; if (x > rowmax[r]) rowmax[r] = x; if (x > vmax) vmax = x;
  }
  if (S.value === 'weight' || !(vmax > 0)) vmax = 1;
  return { w: w, v: v, vmax: vmax, rowmax: rowmax };
}
function load() {
  var hv = headValues(S.l, S.h);
  S.w = hv.w; S.v = hv.v; S.vmax = hv.vmax; S.rowmax = hv.rowmax;
  S.s = D.scores ? f16(block('s', S.l, S.h), 0, N) : null;
  S.layer = null;  // the head view's heads of layer S.l, decoded when it is drawn
}
function unit(x, i, scale, hv) {
  hv = hv || S;
  if (!(x > 0)) return 0;
  if (scale === 'perrow') return hv.rowmax[i] > 0 ? x / hv.rowmax[i] : 0;
  if (scale === 'log') return Math.max(0, Math.min(1, (Math.log10(x / hv.vmax) + 4) / 4));
  return Math.min(1, x / hv.vmax);
}
var STOPS = [[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]];
function ramp(t) {
  t = Math.max(0, Math.min(1, t)) * (STOPS.length - 1);
  var k = Math.min(STOPS.length - 2, Math.floor(t)), f = t - k, a = STOPS[k], b = STOPS[k + 1];
  return [Math.round(a[0] + (b[0] - a[0]) * f), Math.round(a[1] + (b[1] - a[1]) * f),
      Math.round(a[2] + (b[2] - a[2]) * f)];
}

// ---- DOM helpers: text only
function el(tag, cls, text) {
  var e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = text;
  return e;
}
function fmt(x) {
  return x === -Infinity ? '-inf' : x === Infinity ? 'inf'
       : (Math.abs(x) >= 1e-3 || x === 0 ? x.toFixed(4) : x.toExponential(2));
}

document.title = D.title || 'attn';
var body = document.body;
body.appendChild(el('h1', null, D.title));
if (D.subtitle) body.appendChild(el('p', 'sub', D.subtitle));
if (D.source) body.appendChild(el('p', 'src', T.source + D.source));
var err = el('div'); err.id = 'err'; body.appendChild(err);

// controls
var nav = el('nav'); body.appendChild(nav);
var tabs = {};
['head', 'model', 'matrix'].forEach(function (v) {
  var b = el('button', null, T[v]); b.type = 'button'; b.dataset.view = v; tabs[v] = b; nav.appendChild(b);
  b.addEventListener('click', function () { setView(v); });
});
function select(label, options, value, onchange) {
  var lab = el('label', null, label + ' '), s = el('select');
  options.forEach(function (o) { var op = el('option', null, o[1]); op.value = String(o[0]); s.appendChild(op); });
  s.value = String(value); s.addEventListener('change', function () { onchange(s.value); });
  lab.appendChild(s); nav.appendChild(lab); return s;
}
function range(n) { var a = []; for (var i = 0; i < n; i++) a.push([i, String(i)]); return a; }
var selL = select(T.layer, range(NL), 0, function (v) { S.l = +v; reload(); });
var selH = select(T.headsel, range(NH), 0, function (v) { S.h = +v; reload(); });
selL.id = 'sel-layer'; selH.id = 'sel-head';
if (NB > 1) {  // a forward pass of several batch rows: which one the views show
  var selB = select(T.batch, range(NB), 0, function (v) { S.b = +v; thumbs.forEach(drawThumb); reload(); });
  selB.id = 'sel-batch'; nav.insertBefore(selB.parentNode, selL.parentNode);
}
var selS = select(T.scale, [['absolute', T.absolute], ['perrow', T.perrow], ['log', T.log]], S.scale,
    function (v) { S.scale = v; redraw(); });
selS.id = 'sel-scale';
var selV = select(T.show, VN ? [['weight', T.weight], ['norm', T.norm]] : [['weight', T.weight]], 'weight',
    function (v) { S.value = v; reload(); });
selV.id = 'sel-value';

// ---- head view
var secHead = el('section', 'view'); secHead.id = 'view-head'; body.appendChild(secHead);
secHead.appendChild(el('p', 'help', T.headhelp));
var hv = el('div', 'hv'); secHead.appendChild(hv);
var colQ = el('div', 'col q'), colK = el('div', 'col k'), lines = el('canvas');
var ROW = 18, GAP = 220;
hv.appendChild(colQ); hv.appendChild(lines); hv.appendChild(colK);
lines.width = GAP; lines.height = Math.max(Tq, Tk) * ROW;
var qEls = [], kEls = [];
for (var i0 = 0; i0 < Tq; i0++) (function (i) {
  var e = el('div', 'tok', qtok(i)); e.title = i + ': ' + qtok(i); colQ.appendChild(e); qEls.push(e);
  e.addEventListener('mouseenter', function () { S.focus = { side: 'q', i: i }; drawHead(); });
  e.addEventListener('mouseleave', function () { S.focus = null; drawHead(); });
})(i0);
for (var j0 = 0; j0 < Tk; j0++) (function (j) {
  var e = el('div', 'tok', ktok(j)); e.title = j + ': ' + ktok(j); colK.appendChild(e); kEls.push(e);
  e.addEventListener('mouseenter', function () { S.focus = { side: 'k', i: j }; drawHead(); });
  e.addEventListener('mouseleave', function () { S.focus = null; drawHead(); });
})(j0);
// The head view's legend: a colour per head; a click shows that head alone, a second click all of
// them (S.shown: the heads drawn; null: every head of the layer).
var COLOURS = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f',
               '#bcbd22', '#17becf', '#393b79', '#ad494a', '#637939', '#7b4173', '#3182bd', '#e6550d'];
function colour(h) { return COLOURS[h % COLOURS.length]; }
var hvLegend = el('div', 'legend heads'); hvLegend.id = 'hv-legend'; secHead.insertBefore(hvLegend, hv);
var hvItems = [];
function legendItem(h) {
  var b = el('button', null, h < 0 ? T.allheads : T.H + ' ' + h); b.type = 'button';
  if (h >= 0) { var sw = el('span', 'swatch'); sw.style.background = colour(h); b.insertBefore(sw, b.firstChild); }
  b.dataset.head = String(h);
  b.addEventListener('click', function () {
    S.shown = h < 0 || (S.shown && S.shown.length === 1 && S.shown[0] === h) ? null : [h];
    drawHead();
  });
  hvLegend.appendChild(b); hvItems.push(b);
}
if (NH > 1) { legendItem(-1); for (var lh = 0; lh < NH; lh++) legendItem(lh); }
function drawHead() {
  if (!S.w) return;
  if (!S.layer) { S.layer = []; for (var h0 = 0; h0 < NH; h0++) S.layer.push(h0 === S.h ? S : headValues(S.l, h0)); }
  var heads = S.shown || (NH > 1 ? S.layer.map(function (_, h) { return h; }) : [S.h]);
  var ctx = lines.getContext('2d'), f = S.focus, B = 24, mh = heads.length === 1 ? heads[0] : S.h;
  ctx.clearRect(0, 0, lines.width, lines.height);
  ctx.lineWidth = 2;
  lines.dataset.heads = heads.join(',');
  heads.forEach(function (h) {
    var hv = S.layer[h], paths = [];
    for (var b = 0; b <= B; b++) paths.push(new Path2D());
    for (var i = 0; i < Tq; i++) {
      if (f && f.side === 'q' && f.i !== i) continue;
      for (var j = 0; j < Tk; j++) {
        if (f && f.side === 'k' && f.i !== j) continue;
        if (!allowed(h, i, j)) continue;
        var k = Math.round(unit(hv.v[i * Tk + j], i, S.scale, hv) * B);
        if (k === 0) continue;
        paths[k].moveTo(2, i * ROW + ROW / 2); paths[k].lineTo(GAP - 2, j * ROW + ROW / 2);
      }
    }
    ctx.strokeStyle = NH > 1 ? colour(h) : 'rgb(59,91,219)';
    for (var p = 1; p <= B; p++) { ctx.globalAlpha = p / B; ctx.stroke(paths[p]); }
  });
  ctx.globalAlpha = 1;
  hvItems.forEach(function (b) {
    var h = +b.dataset.head;
    b.className = (h < 0 ? !S.shown : S.shown && S.shown.indexOf(h) >= 0) ? 'on' : '';
  });
  qEls.forEach(function (e, i) {
    e.className = 'tok' + (f && f.side === 'q' && f.i === i ? ' hot' : f && f.side === 'q' ? ' dim'
                           : f && f.side === 'k' && !allowed(mh, i, f.i) ? ' masked' : '');
  });
  kEls.forEach(function (e, j) {
    e.className = 'tok' + (f && f.side === 'k' && f.i === j ? ' hot' : f && f.side === 'q' && !allowed(mh, f.i, j)
                           ? ' masked' : f && f.side === 'k' ? ' dim' : '');
  });
}

// ---- model view: every layer x head
var secModel = el('section', 'view'); secModel.id = 'view-model'; body.appendChild(secModel);
secModel.appendChild(el('p', 'help', T.modelhelp));
// the thumbnails' colour scale: the ramp is drawn on a square-root scale, so its middle is a weight of 0.25
var thLegend = el('div', 'legend'); thLegend.id = 'thumb-legend'; secModel.appendChild(thLegend);
var thBar = el('canvas'); thBar.width = 160; thBar.height = 10;
thLegend.appendChild(el('span', null, '0')); thLegend.appendChild(thBar); thLegend.appendChild(el('span', null, '1'));
thLegend.appendChild(el('span', null, '(' + T.sqrtmid + ') \u00b7 ' + T.thumbhelp));
var grid = el('div', 'grid'); secModel.appendChild(grid);
// few heads get large thumbnails (a forward pass of 4 heads is read at a glance), many stay small
var THUMB = NL * NH <= 16 ? 168 : 84;
grid.style.gridTemplateColumns = '36px repeat(' + NH + ', ' + (THUMB + 8) + 'px)';
grid.appendChild(el('div'));
for (var hh = 0; hh < NH; hh++) grid.appendChild(el('div', 'cl', T.H + ' ' + hh));
var thumbs = [];
for (var l = 0; l < NL; l++) {
  grid.appendChild(el('div', 'rl', T.L + ' ' + l));
  for (var h = 0; h < NH; h++) (function (l, h) {
    var fig = el('figure', 'th'), c = el('canvas', 'thumb');
    c.width = D.thumb.w; c.height = D.thumb.h;
    c.style.width = c.style.height = THUMB + 'px'; fig.style.width = (THUMB + 8) + 'px';
    fig.appendChild(c);
    // (the captions are the batch row's: drawThumb writes them)
    var caps = [el('figcaption'), el('figcaption'), D.notes.length ? el('figcaption', 'note') : null];
    caps.forEach(function (x) { if (x) fig.appendChild(x); });
    fig.dataset.layer = String(l); fig.dataset.head = String(h);
    fig.addEventListener('click', function () {
      S.l = l; S.h = h; selL.value = String(l); selH.value = String(h);
      if (parsed) load();
      setView('matrix');
    });
    grid.appendChild(fig); thumbs.push({ l: l, h: h, c: c, fig: fig, caps: caps });
  })(l, h);
}
// the thumbnails come max-pooled from the page's writer, 8 bits on a square-root scale: q / 255 = sqrt(max w)
var TB = bytes(D.thumb.d), LUT = [];
for (var q8 = 0; q8 < 256; q8++) LUT.push(ramp(q8 / 255));
(function () {
  var g = thBar.getContext('2d');
  for (var px = 0; px < thBar.width; px++) {
    var rc = ramp(px / (thBar.width - 1)); g.fillStyle = 'rgb(' + rc[0] + ',' + rc[1] + ',' + rc[2] + ')';
    g.fillRect(px, 0, 1, thBar.height);
  }
})();
function drawThumb(t) {
  var k = slot(t.l, t.h), g = D.figs[k];
  var note = D.notes.length ? D.notes[k] : T.sink + ': ' + T.topkey + ' \u2039' + ktok(g[2]) + '\u203a';
  t.caps[0].textContent = T.entropy + ' ' + g[0].toFixed(2);
  t.caps[1].textContent = T.sink + ' ' + Math.round(100 * g[1]) + '% \u2039' + ktok(g[2]) + '\u203a';
  if (t.caps[2]) t.caps[2].textContent = note;
  t.fig.title = T.L + ' ' + t.l + ', ' + T.H + ' ' + t.h + ': ' + note;
  var cw = t.c.width, ch = t.c.height, ctx = t.c.getContext('2d'), img = ctx.createImageData(cw, ch),
      off = k * cw * ch;
  for (var p = 0; p < cw * ch; p++) {
    var rgb = LUT[TB[off + p]], o = 4 * p;
    img.data[o] = rgb[0]; img.data[o + 1] = rgb[1]; img.data[o + 2] = rgb[2]; img.data[o + 3] = 255;
  }
  ctx.putImageData(img, 0, 0);
  t.c.dataset.drawn = '1';
}

// ---- matrix view
var secMx = el('section', 'view'); secMx.id = 'view-matrix'; body.appendChild(secMx);
secMx.appendChild(el('p', 'help', T.matrixhelp));
var legend = el('div', 'legend'); secMx.appendChild(legend);
var bar = el('canvas'); bar.width = 160; bar.height = 10;
var lo = el('span', null, T.min), hi = el('span');
legend.appendChild(lo); legend.appendChild(bar); legend.appendChild(hi);
var mxInfo = el('div'); mxInfo.id = 'mx-info'; secMx.appendChild(mxInfo);
var mxWrap = el('div', 'mx'); secMx.appendChild(mxWrap);
var mx = el('canvas', 'matrix'); mxWrap.appendChild(mx);
var CS = Math.max(1, Math.min(26, Math.floor(720 / Math.max(Tq, Tk))));
// the label margins fit the longest (clipped) token
var LAB = CS >= 9, ML = 18, MT = 18, LABFONT = Math.min(12, CS) + 'px system-ui, "Noto Sans CJK SC", sans-serif';
if (LAB) {
  var mctx = mx.getContext('2d'); mctx.font = LABFONT;
  for (var r0 = 0; r0 < Tq; r0++) ML = Math.max(ML, Math.ceil(mctx.measureText(clip(qtok(r0))).width) + 26);
  for (var k0 = 0; k0 < Tk; k0++) MT = Math.max(MT, Math.ceil(mctx.measureText(clip(ktok(k0))).width) + 26);
}
mx.width = ML + Tk * CS; mx.height = MT + Tq * CS;
mx.dataset.cell = String(CS); mx.dataset.left = String(ML); mx.dataset.top = String(MT);
function drawMatrix() {
  // the cells as one image (a fillRect per cell is slow at T = 512), then one path of hatches for masked cells
  var ctx = mx.getContext('2d'), img = ctx.createImageData(Tk * CS, Tq * CS), d = img.data, W = Tk * CS,
      hatch = new Path2D();
  ctx.fillStyle = '#fff'; ctx.fillRect(0, 0, mx.width, mx.height);
  for (var i = 0; i < Tq; i++) for (var j = 0; j < Tk; j++) {
    var c, ok = allowed(S.h, i, j);
    if (ok) c = LUT[Math.round(255 * unit(S.v[i * Tk + j], i, S.scale))];
    else {
      c = [238, 240, 242];
      if (CS >= 4) { hatch.moveTo(ML + j * CS, MT + i * CS + CS); hatch.lineTo(ML + j * CS + CS, MT + i * CS); }
    }
    for (var y = i * CS; y < (i + 1) * CS; y++) for (var x = j * CS; x < (j + 1) * CS; x++) {
      var o = 4 * (y * W + x); d[o] = c[0]; d[o + 1] = c[1]; d[o + 2] = c[2]; d[o + 3] = 255;
    }
  }
  ctx.putImageData(img, ML, MT);
  ctx.strokeStyle = '#aab2bb'; ctx.lineWidth = 1; ctx.stroke(hatch);
  if (LAB) {
    ctx.fillStyle = '#1f2328'; ctx.font = LABFONT;
    ctx.textAlign = 'right'; ctx.textBaseline = 'middle';
    for (var r = 0; r < Tq; r++) ctx.fillText(clip(qtok(r)), ML - 4, MT + r * CS + CS / 2);
    for (var k = 0; k < Tk; k++) {
      ctx.save(); ctx.translate(ML + k * CS + CS / 2, MT - 4); ctx.rotate(-Math.PI / 2);
      ctx.textAlign = 'left'; ctx.fillText(clip(ktok(k)), 0, 0); ctx.restore();
    }
  }
  // the axis titles, in the margins' outer 16 px
  ctx.fillStyle = '#59636e'; ctx.font = 'italic 12px system-ui, "Noto Sans CJK SC", sans-serif';
  ctx.textAlign = 'left'; ctx.textBaseline = 'top'; ctx.fillText(T.keys + ' \u2192', ML, 2);
  // (read bottom to top, the arrow pointing down the rows)
  ctx.save(); ctx.translate(2, MT); ctx.rotate(-Math.PI / 2); ctx.textAlign = 'right';
  ctx.fillText('\u2190 ' + T.queries, 0, 0); ctx.restore();
  var bctx = bar.getContext('2d');
  for (var px = 0; px < bar.width; px++) {
    var rc = ramp(px / (bar.width - 1));
    bctx.fillStyle = 'rgb(' + rc[0] + ',' + rc[1] + ',' + rc[2] + ')'; bctx.fillRect(px, 0, 1, bar.height);
  }
  lo.textContent = S.scale === 'log' ? fmt(S.vmax * 1e-4) : '0';
  hi.textContent = S.scale === 'perrow' ? T.max + ' (' + T.perrow + ')' : fmt(S.vmax);
}
function clip(s) { return s.length > 14 ? s.slice(0, 13) + '\u2026' : s; }
var tip = el('div', 'tip'); tip.hidden = true; body.appendChild(tip);
function cellText(i, j) {
  var w = S.w[i * Tk + j], a = allowed(S.h, i, j), lines = [
    T.query + ' ' + i + ' \u2039' + qtok(i) + '\u203a',
    T.key + ' ' + j + ' \u2039' + ktok(j) + '\u203a',
    T.score + ' ' + (S.s ? fmt(S.s[i * Tk + j]) : D.scores_left_out ? T.noscore : T.noscoresrc),
    T.weightw + ' ' + fmt(w)];
  if (VN) lines.push(T.normw + ' ' + fmt(w * VN[(S.l * NH + S.h) * Tk + j]));
  lines.push(T.mask + ': ' + (a ? T.allowed : T.masked));
  return lines.join('\n');
}
mx.addEventListener('mousemove', function (ev) {
  if (!S.w) return;
  var r = mx.getBoundingClientRect(), j = Math.floor((ev.clientX - r.left - ML) / CS),
      i = Math.floor((ev.clientY - r.top - MT) / CS);
  if (i < 0 || j < 0 || i >= Tq || j >= Tk) { tip.hidden = true; return; }
  var text = (NB > 1 ? T.batch + ' ' + S.b + ', ' : '') + T.L + ' ' + S.l + ', ' + T.H + ' ' + S.h + '\n' +
             cellText(i, j);
  tip.textContent = text; mxInfo.textContent = text.replace(/\n/g, '   ');
  mxInfo.dataset.i = String(i); mxInfo.dataset.j = String(j); mxInfo.dataset.w = String(S.w[i * Tk + j]);
  tip.hidden = false; tip.style.left = (ev.clientX + 14) + 'px'; tip.style.top = (ev.clientY + 14) + 'px';
});
mx.addEventListener('mouseleave', function () { tip.hidden = true; });

// ---- shapes and the footer
var secShapes = el('section'); body.appendChild(secShapes);
if (D.shapes.length) {
  secShapes.appendChild(el('h2', null, T.shapes));
  var tb = el('table', 'shapes'); secShapes.appendChild(tb);
  D.shapes.forEach(function (s) {
    var tr = el('tr'); tr.appendChild(el('td', 'n', s[0])); tr.appendChild(el('td', 'n', s[1])); tb.appendChild(tr);
  });
}
var foot = el('footer'); body.appendChild(foot);
foot.appendChild(el('p', 'note', (D.enc === 'f16' ? T.enc16 : T.enc8) + D.maxerr.toExponential(2) + '.'));
if (!VN) foot.appendChild(el('p', 'note', T.nonorm));

// In a frame that asks for it (data-fit: the tour's lessons, the lab's sentence page), the page sizes
// its frame to its content after each draw, so no fixed height leaves blank space or a scroll bar.
// The views' height caps (a share of the window) are lifted there, so the content's height does not
// follow the frame's; a frame not laid out yet (a closed lesson) is fitted when it is (resize).
var FIT = (function () { try { var f = window.frameElement; return f && f.hasAttribute('data-fit') ? f : null; }
                         catch (e) { return null; } })();  // (a frame of another origin: left alone)
if (FIT) { body.classList.add('fit'); window.addEventListener('resize', function () { fitFrame(); }); }
function fitFrame() {
  if (!FIT || !(body.offsetHeight > 0)) return;
  var h = Math.ceil(body.offsetTop + body.offsetHeight + 4) + 'px';
  if (FIT.style.height !== h) FIT.style.height = h;
}
function setView(v) {
  S.view = v;
  ['head', 'model', 'matrix'].forEach(function (k) { tabs[k].className = k === v ? 'on' : ''; });
  secHead.className = 'view' + (v === 'head' ? ' on' : '');
  secModel.className = 'view' + (v === 'model' ? ' on' : '');
  secMx.className = 'view' + (v === 'matrix' ? ' on' : '');
  redraw();
}
// only the view on screen is drawn; the others are drawn when they are shown
function redraw() {
  thumbs.forEach(function (t) { t.fig.className = 'th' + (t.l === S.l && t.h === S.h ? ' sel' : ''); });
  if (!S.w) return;  // the heads' data is still loading
  if (S.view === 'head') drawHead();
  if (S.view === 'matrix') drawMatrix();
  fitFrame();
}
// The heads' data elements follow this script: the model view draws from the thumbnails at once, the
// rest waits for the parser to reach the end of the page (seconds for a 50 MB page).
function whenParsed(f) {
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', f); else f();
}
var firstNeedsHead = S.view !== 'model', pending = firstNeedsHead ? 2 : 1;  // the thumbnails, and the head shown first
function done() {
  if (--pending > 0) return;
  body.dataset.scriptMs = String(T0); body.dataset.readyMs = String(performance.now()); body.dataset.ready = '1';
  fitFrame();
}
function guard(f) { return function () { try { f(); } catch (e) { err.textContent = String(e); throw e; } }; }
setView(S.view);
whenParsed(guard(function () {
  parsed = true; load(); redraw(); body.dataset.parsedMs = String(performance.now());
  if (firstNeedsHead) done();
}));
guard(function () {
  var next = 0;
  (function step() {
    var until = Date.now() + 30;
    while (next < thumbs.length && Date.now() < until) drawThumb(thumbs[next++]);
    grid.dataset.drawn = String(next);
    if (next < thumbs.length) setTimeout(guard(step), 0); else done();
  })();
})();
