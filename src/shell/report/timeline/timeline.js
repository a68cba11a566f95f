/* The job timeline of durasim's HTML report (compiled into index.html by timeline/page.rs; no
 * network, no library). Reads the data embedded in #tl-data, draws the lanes into #tl-svg, and
 * follows the controls, the mouse (drag to pan, wheel to zoom) and the location's hash:
 *   #tl?v=INVARIANT                   the violation's jobs, moment and evidence
 *   #tl?jobs=3,17&at=1105&from=0&to=2000&only=0&full=1
 * It reports what it drew on <html data-tl-*> for the headless-browser test. */
(function () {
  'use strict';
  var NS = 'http://www.w3.org/2000/svg';
  var root = document.documentElement;
  var data = JSON.parse(document.getElementById('tl-data').textContent);
  var T = data.timeline, V = data.violations;
  var svg = document.getElementById('tl-svg'), box = document.getElementById('tl-box');
  var QUEUE = 0, RELAY = 1, CONSUMER = 2, W0 = 3;
  var LANE_H = 26, TOP = 34, GUTTER = 112, RIGHT = 14, GAP = 24, MAX_NODES = 6000;
  var BAD = '#b3261e';
  // bars: [worker, job, fence, attempt, start, end, lost, outcome]
  // marks: [lane, at, kind, job, fence, detail]; bands: [lane, start, end, kind, job]
  var OUTCOME = { acked: '#009E73', retry: '#E69F00', crashed: '#D55E00', dead_lettered: '#8c1d18',
    cancelled: '#808080', open: '#56B4E9', abandoned: '#56B4E9' };
  var KIND = {
    hb: ['tick', '#777', 'heartbeat'], crash: ['x', '#D55E00', 'worker crash'],
    exp: ['diamond', '#222', 'lease expired'], commit: ['dot', '#0072B2', 'result committed'],
    dedupe: ['ring', '#0072B2', 'commit deduped'], conflict: ['hsquare', '#0072B2', 'commit conflict'],
    ack: ['check', '#009E73', 'ack accepted'], rej: ['slash', BAD, 'fenced call refused'],
    retry: ['tri', '#E69F00', 'retry scheduled'], dlq: ['square', '#8c1d18', 'dead-lettered'],
    cancel: ['square', '#808080', 'cancelled'], fail: ['x', '#E69F00', 'attempt failed'],
    enq: ['dot', '#999', 'enqueued'], enq_dedupe: ['ring', '#999', 'enqueue deduped'],
    enq_conflict: ['hsquare', '#999', 'enqueue conflict'], enq_replace: ['diamond', '#999', 'payload replaced'],
    evict: ['hsquare', '#8c1d18', 'evicted from the DLQ'], mutate: ['diamond', '#CC79A7', 'payload mutated'],
    op: ['tri', '#009E73', 'operator reprocess'], op_refused: ['hsquare', '#009E73', 'reprocess refused'],
    pub: ['dot', '#CC79A7', 'published'], repub: ['ring', '#CC79A7', 'republished'],
    marked: ['tick', '#CC79A7', 'marked published'], pruned: ['tick', '#999', 'outbox pruned'],
    rcrash: ['x', '#D55E00', 'relay crash'], ccrash: ['x', '#D55E00', 'consumer crash'],
    apply: ['dot', '#56B4E9', 'effect applied'], dup: ['ring', '#56B4E9', 'duplicate absorbed'],
    review: ['tick', '#56B4E9', 'review done']
  };
  var EVIDENCE_KIND = { heartbeat: ['hb'], worker_crashed: ['crash'], lease_expired: ['exp'],
    result_committed: ['commit'], commit_deduped: ['dedupe'], commit_conflict: ['conflict'],
    acked: ['ack'], rejected: ['rej'], retry_scheduled: ['retry'], dead_lettered: ['dlq'],
    cancelled: ['cancel'], attempt_failed: ['fail'], enqueued: ['enq'], published: ['pub', 'repub'],
    effect_applied: ['apply'], duplicate_event: ['dup'], review_done: ['review'],
    reprocessed: ['op'], reprocess_refused: ['op_refused'], dlq_evicted: ['evict'] };
  var ROUTINE = { hb: 1, review: 1, enq: 1, commit: 1, ack: 1, pub: 1, apply: 1, marked: 1, retry: 1 };
  var S = { t0: 0, t1: 1, jobs: null, only: true, at: null, vio: null };

  function el(name, attrs, parent) {
    var e = document.createElementNS(NS, name);
    for (var k in attrs) { if (attrs[k] !== null && attrs[k] !== undefined) e.setAttribute(k, attrs[k]); }
    if (parent) parent.appendChild(e);
    return e;
  }
  function title(e, text) { el('title', {}, e).textContent = text; }
  function grouped(n) {
    var s = String(Math.round(Math.abs(n))).replace(/\B(?=(\d{3})+(?!\d))/g, '\u2009');
    return (n < 0 ? '-' : '') + s;
  }
  function ms(t) {
    if (Math.round(t * 1000) % 1000 === 0) return grouped(t) + ' ms';
    var s = t.toFixed(3), dot = s.indexOf('.');
    return grouped(Number(s.slice(0, dot))) + s.slice(dot) + ' ms';
  }
  function spanText(a, b) { return b - a > 20 ? grouped(a) + ' to ' + grouped(b) + ' ms' : ms(a) + ' to ' + ms(b); }
  function laneOf(code) {
    if (code === QUEUE) return 'queue';
    if (code === RELAY) return 'relay';
    if (code === CONSUMER) return 'consumer';
    return 'worker-' + (code - W0);
  }
  function picked(job) { return !S.jobs || (job !== null && S.jobs.hasOwnProperty(job)); }

  /** The lanes shown, top to bottom, with their y. */
  function lanes() {
    var used = {};
    if (S.jobs && S.only) {
      T.bars.forEach(function (b) { if (picked(b[1])) used[W0 + b[0]] = true; });
      T.marks.forEach(function (m) { if (m[0] >= W0 && picked(m[3])) used[m[0]] = true; });
      T.bands.forEach(function (b) { if (b[0] >= W0 && b[4] !== null && picked(b[4])) used[b[0]] = true; });
    }
    var out = [{ code: QUEUE }], y = TOP;
    for (var w = 0; w < T.workers; w++) {
      if (!S.jobs || !S.only || used[W0 + w]) out.push({ code: W0 + w });
    }
    out.push({ code: RELAY, gap: true }, { code: CONSUMER });
    out.forEach(function (l) { if (l.gap) y += GAP; l.y = y; l.name = laneOf(l.code); y += LANE_H; });
    return out;
  }

  function niceStep(span) {
    var raw = span / 8, p = Math.pow(10, Math.floor(Math.log(raw) / Math.LN10));
    var m = [1, 2, 5, 10].filter(function (k) { return k * p >= raw; })[0];
    return m * p;
  }

  function symbol(g, shape, color) {
    var s = { stroke: color, fill: 'none', 'stroke-width': 2 };
    switch (shape) {
      case 'tick': el('path', { d: 'M0,-7V7', stroke: color, 'stroke-width': 1.5 }, g); break;
      case 'x': el('path', { d: 'M-5,-5L5,5M-5,5L5,-5', stroke: color, 'stroke-width': 2.5 }, g); break;
      case 'dot': el('circle', { r: 4, fill: color }, g); break;
      case 'ring': s.r = 4; el('circle', s, g); break;
      case 'diamond': el('path', { d: 'M0,-6L6,0L0,6L-6,0Z', fill: color }, g); break;
      case 'tri': el('path', { d: 'M-5,5L0,-6L5,5Z', fill: color }, g); break;
      case 'square': el('rect', { x: -4, y: -4, width: 8, height: 8, fill: color }, g); break;
      case 'hsquare': s.x = -4; s.y = -4; s.width = 8; s.height = 8; el('rect', s, g); break;
      case 'slash': s.r = 5; el('circle', s, g); el('path', { d: 'M-4,4L4,-4', stroke: color, 'stroke-width': 2 }, g); break;
      default: el('path', { d: 'M-5,0L-1,5L6,-6', stroke: color, fill: 'none', 'stroke-width': 2.5 }, g);
    }
  }

  /** Whether a mark is one of the violation's evidence records. */
  function isEvidence(m) {
    if (!S.vio) return false;
    return S.vio.evidence.some(function (e) {
      var kinds = EVIDENCE_KIND[e.type] || [], fence = e.fence !== undefined ? e.fence : e.presented;
      return kinds.indexOf(m[2]) >= 0 && Math.abs(e.at / T.perMs - m[1]) < 0.0011 &&
        (e.job === undefined || e.job === m[3]) && (e.worker === undefined || m[0] === W0 + e.worker) &&
        (fence === undefined || m[4] === null || m[4] === fence);
    });
  }
  function isEvidenceBar(b) {
    return !!S.vio && S.vio.evidence.some(function (e) {
      return e.type === 'leased' && e.job === b[1] && e.fence === b[2];
    });
  }

  var X;
  function render() {
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    var width = Math.max(640, box.clientWidth || 1200), L = lanes();
    var height = L[L.length - 1].y + LANE_H + 12, span = S.t1 - S.t0, plotW = width - GUTTER - RIGHT;
    X = function (t) { return GUTTER + (t - S.t0) / span * plotW; };
    svg.setAttribute('width', width); svg.setAttribute('height', height);
    svg.setAttribute('viewBox', '0 0 ' + width + ' ' + height);
    var y = {}; L.forEach(function (l) { y[l.code] = l.y; });
    var defs = el('defs', {}, svg);
    var hatch = el('pattern', { id: 'tl-hatch', width: 6, height: 6, patternUnits: 'userSpaceOnUse',
      patternTransform: 'rotate(45)' }, defs);
    el('rect', { width: 6, height: 6, fill: '#fde2df' }, hatch);
    el('path', { d: 'M0,0V6', stroke: BAD, 'stroke-width': 2.5 }, hatch);
    var clip = el('clipPath', { id: 'tl-clip' }, defs);
    el('rect', { x: GUTTER, y: 0, width: plotW, height: height }, clip);
    drawLanes(L, width);
    drawAxis(height, plotW);
    var plot = el('g', { 'clip-path': 'url(#tl-clip)' }, svg);
    var counts = { bars: 0, marks: 0, skipped: 0, merged: 0, routine: 0, evidence: 0 };
    drawBands(plot, y); drawBars(plot, y, counts); drawMarks(plot, y, counts); drawFocus(plot, height);
    report(L, counts);
  }

  function drawLanes(L, width) {
    L.forEach(function (l, i) {
      el('rect', { 'class': 'tl-lane', 'data-lane': l.name, x: 0, y: l.y, width: width, height: LANE_H,
        fill: i % 2 ? '#ffffff' : '#f1f3f6' }, svg);
      var t = el('text', { x: GUTTER - 8, y: l.y + LANE_H / 2 + 4, 'text-anchor': 'end', 'font-size': 12,
        fill: '#333' }, svg);
      t.textContent = l.name;
      if (l.gap) {
        var s = el('text', { x: 8, y: l.y - 8, 'font-size': 11, fill: '#666' }, svg);
        s.textContent = 'outbox / consumer side';
      }
    });
  }

  function drawAxis(height, plotW) {
    var step = niceStep(S.t1 - S.t0), first = Math.ceil(S.t0 / step) * step;
    for (var t = first; t <= S.t1 + 1e-9; t += step) {
      var x = X(t);
      el('line', { x1: x, x2: x, y1: TOP - 6, y2: height - 8, stroke: '#000', 'stroke-opacity': 0.08 }, svg);
      var lab = el('text', { x: x, y: TOP - 10, 'text-anchor': 'middle', 'font-size': 12, fill: '#444' }, svg);
      lab.textContent = grouped(t) + (step < 1 ? '.' + String(Math.round((t % 1) * 1000)).padStart(3, '0') : '');
    }
    var u = el('text', { x: 8, y: TOP - 10, 'font-size': 12, fill: '#444' }, svg);
    u.textContent = 'virtual ms';
    el('line', { x1: GUTTER, x2: GUTTER + plotW, y1: TOP - 1, y2: TOP - 1, stroke: '#bbb' }, svg);
  }

  function visible(a, b) { return b >= S.t0 && a <= S.t1; }
  function dim(job) { return S.jobs && !picked(job) ? 0.18 : 1; }

  function drawBands(plot, y) {
    T.bands.forEach(function (b) {
      if (y[b[0]] === undefined || !visible(b[1], b[2]) || (S.only && S.jobs && b[4] !== null && !picked(b[4]))) return;
      var x = X(b[1]), w = Math.max(2, X(b[2]) - x), down = b[3] === 'down';
      var r = el('rect', { 'class': 'tl-band', 'data-kind': b[3], x: x, y: y[b[0]] + 1, width: w, height: LANE_H - 2,
        fill: down ? '#9e9e9e' : '#E69F00', 'fill-opacity': down ? 0.3 : 0.6, opacity: dim(b[4]) }, plot);
      title(r, (down ? 'worker down after a crash' : b[3] + ' (no heartbeat)' + (b[4] !== null ? ', job-' + b[4] : '')) +
        ': ' + ms(b[1]) + ' to ' + ms(b[2]));
    });
  }

  function barTitle(b) {
    var s = 'job-' + b[1] + ' attempt ' + b[3] + ' on worker-' + b[0] + ', fence ' + b[2] + ': leased at ' + ms(b[4]);
    if (b[6] !== null) s += ', lease expired at ' + ms(b[6]) + (b[6] < b[5] ? ' (the holder went on without it)' : '');
    return s + ', last step at ' + ms(b[5]) + ': ' + b[7].replace(/_/g, ' ');
  }

  /** Whether an item narrower than a few pixels lands where one like it is drawn already: a
   *  whole-run view of a big run draws one per pixel column, so it covers the run evenly. */
  function merged(seen, key, x, narrow) {
    if (!narrow) return false;
    var k = key + ':' + Math.round(x / 3);
    if (seen[k]) return true;
    seen[k] = true;
    return false;
  }

  function drawBars(plot, y, counts) {
    var seen = {};
    T.bars.forEach(function (b) {
      var lane = W0 + b[0], end = Math.max(b[5], b[6] !== null ? b[6] : b[5]);
      if (y[lane] === undefined || !visible(b[4], end) || (S.only && !picked(b[1]))) return;
      if (merged(seen, lane, X(b[4]), X(end) - X(b[4]) < 3)) { counts.merged++; return; }
      if (counts.bars + counts.marks > MAX_NODES) { counts.skipped++; return; }
      counts.bars++;
      var hl = !!S.jobs && picked(b[1]), x = X(b[4]), x2 = Math.max(x + 2, X(b[5])), top = y[lane] + 5, h = LANE_H - 10;
      var g = el('g', { 'class': 'tl-bar' + (hl ? ' tl-hl' : ''), 'data-job': b[1], 'data-fence': b[2],
        'data-worker': b[0], 'data-lane': 'worker-' + b[0], 'data-outcome': b[7], opacity: dim(b[1]) }, plot);
      title(g, barTitle(b));
      el('rect', { x: x, y: top, width: x2 - x, height: h, rx: 2,
        fill: OUTCOME[b[7]] || (/_rejected$/.test(b[7]) ? '#CC79A7' : '#56B4E9'),
        stroke: hl ? '#111' : 'none', 'stroke-width': hl ? 1.5 : 0 }, g);
      if (b[6] !== null && b[6] < b[5]) {
        el('rect', { 'class': 'tl-lost', x: X(b[6]), y: top, width: Math.max(1, x2 - X(b[6])), height: h,
          fill: 'url(#tl-hatch)', stroke: BAD, 'stroke-width': 1 }, g);
      } else if (b[6] !== null && b[6] > b[5]) {
        el('rect', { 'class': 'tl-held', x: x2, y: top + 3, width: Math.max(1, X(b[6]) - x2), height: h - 6,
          fill: 'none', stroke: '#888', 'stroke-dasharray': '3,2' }, g);
      }
      if (isEvidenceBar(b)) { counts.evidence++; el('rect', { 'class': 'tl-vio', x: x - 3, y: top - 3, width: x2 - x + 6,
        height: h + 6, fill: 'none', stroke: BAD, 'stroke-width': 2.5 }, g); }
      var label = x2 - x >= 118 ? 'job-' + b[1] + ' · fence ' + b[2] : x2 - x >= 46 ? 'j' + b[1] + ' f' + b[2] : '';
      if (label) {
        var t = el('text', { 'class': 'tl-label', x: Math.max(x, GUTTER) + 4, y: top + h - 4, 'font-size': 11,
          fill: '#fff', 'font-weight': 'bold' }, g);
        t.textContent = label;
      }
    });
  }

  function drawMarks(plot, y, counts) {
    var dense = [], seen = {}, inWindow = 0;
    T.marks.forEach(function (m) { if (m[1] >= S.t0 && m[1] <= S.t1) inWindow++; });
    // A crowded window shows what went wrong (crashes, expiries, refusals, dead letters,
    // duplicates...) and leaves the routine steps to a closer look.
    var crowded = inWindow > MAX_NODES / 4;
    T.marks.forEach(function (m, i) {
      if (y[m[0]] === undefined || m[1] < S.t0 || m[1] > S.t1) return;
      if (S.only && S.jobs && m[3] !== null && !picked(m[3])) return;
      if (!isEvidence(m) && merged(seen, m[0] + m[2], X(m[1]), true)) { counts.merged++; return; }
      if (crowded && ROUTINE[m[2]] && !isEvidence(m)) { counts.routine++; return; }
      if (counts.bars + counts.marks > MAX_NODES) { counts.skipped++; return; }
      counts.marks++;
      var k = KIND[m[2]] || ['dot', '#333', m[2]], ev = isEvidence(m);
      var g = el('g', { 'class': 'tl-mark' + (ev ? ' tl-vio' : ''), 'data-kind': m[2], 'data-job': m[3],
        'data-fence': m[4], 'data-at': m[1], 'data-lane': laneOf(m[0]), 'data-i': i, opacity: dim(m[3]),
        transform: 'translate(' + X(m[1]).toFixed(1) + ',' + (y[m[0]] + LANE_H / 2) + ')' }, plot);
      title(g, k[2] + ' at ' + ms(m[1]) + (m[3] !== null ? ', job-' + m[3] : '') +
        (m[4] !== null ? ', fence ' + m[4] : '') + ': ' + m[5]);
      if (k[0] !== 'tick') el('circle', { r: 6.5, fill: '#fff', 'fill-opacity': 0.85 }, g);
      symbol(g, k[0], k[1]);
      if (ev) { counts.evidence++; dense.push(g); }
    });
    var right = X(S.t1) - 300;
    dense.forEach(function (g) {
      el('circle', { r: 11, fill: 'none', stroke: BAD, 'stroke-width': 2.5 }, g);
      var x = +g.getAttribute('transform').slice(10).split(',')[0], left = x > right;
      var t = el('text', { x: left ? -14 : 14, y: -8, 'font-size': 12, 'font-weight': 'bold', fill: BAD,
        'text-anchor': left ? 'end' : 'start' }, g);
      var m = T.marks[+g.getAttribute('data-i')], k = KIND[m[2]] || [0, 0, m[2]];
      t.textContent = S.vio.name + ': ' + k[2] + (m[4] !== null ? ' (fence ' + m[4] + ')' : '');
      g.parentNode.appendChild(g);
    });
  }

  function drawFocus(plot, height) {
    if (S.at === null || S.at < S.t0 || S.at > S.t1) return;
    var x = X(S.at);
    el('line', { 'class': 'tl-focus', x1: x, x2: x, y1: TOP, y2: height - 8, stroke: BAD, 'stroke-width': 1.5,
      'stroke-dasharray': '5,3' }, plot);
  }

  function report(L, counts) {
    root.setAttribute('data-tl-ready', 'true');
    root.setAttribute('data-tl-bars', String(counts.bars));
    root.setAttribute('data-tl-marks', String(counts.marks));
    root.setAttribute('data-tl-merged', String(counts.merged));
    root.setAttribute('data-tl-evidence', String(counts.evidence));
    root.setAttribute('data-tl-lanes', L.map(function (l) { return l.name; }).join(','));
    root.setAttribute('data-tl-focus', S.vio ? S.vio.name : '');
    root.setAttribute('data-tl-window', S.t0 + '..' + S.t1);
    var jobs = S.jobs ? Object.keys(S.jobs).map(function (j) { return 'job-' + j; }).join(', ') : 'all jobs';
    document.getElementById('tl-window').textContent = spanText(S.t0, S.t1) + ' of ' + ms(T.end) + ' · ' + jobs;
    var note = T.jobsShown < T.jobsTotal ? T.jobsShown + ' of ' + T.jobsTotal + ' jobs are in this report. ' : '';
    if (counts.routine) note += counts.routine + ' routine steps (heartbeats, commits, acks, retries, publishes, applies, reviews) are left out of this crowded window: zoom in or pick jobs. ';
    if (counts.merged) note += counts.merged + ' items share a few pixels with one drawn (one of each kind per 3 px of a lane): zoom in to see each. ';
    if (counts.skipped) note += counts.skipped + ' items in this window are not drawn (too many to show): zoom in or pick jobs.';
    document.getElementById('tl-note').textContent = note;
    // Last: the texts above may have moved the drawing.
    var r = svg.getBoundingClientRect();
    root.setAttribute('data-tl-box', [r.left + window.scrollX, r.top + window.scrollY, r.width, r.height]
      .map(Math.round).join(','));
  }

  /** The span of the picked jobs' items, padded, with the moment `at` inside it. */
  function focusWindow(at) {
    var lo = Infinity, hi = -Infinity;
    function take(a, b, job) { if (job !== null && picked(job)) { lo = Math.min(lo, a); hi = Math.max(hi, b); } }
    T.bars.forEach(function (b) { take(b[4], Math.max(b[5], b[6] || 0), b[1]); });
    T.marks.forEach(function (m) { take(m[1], m[1], m[3]); });
    if (at !== null) { lo = Math.min(lo, at); hi = Math.max(hi, at); }
    if (lo === Infinity) return [0, Math.max(1, T.end)];
    var pad = Math.max((hi - lo) * 0.06, 2);
    return [Math.max(lo - pad, 0), hi + pad];
  }

  function setJobs(list) {
    S.jobs = null;
    if (list && list.length) { S.jobs = {}; list.forEach(function (j) { S.jobs[j] = true; }); }
    document.getElementById('tl-jobs').value = list && list.length ? list.join(' ') : '';
  }

  function apply(p) {
    S.vio = null; S.at = null;
    if (!p.v && p.jobs === undefined) setJobs(null);
    if (p.v) {
      S.vio = V.filter(function (v) { return v.name === p.v; })[0] || null;
      if (S.vio) { setJobs(S.vio.jobs); S.at = S.vio.at; }
    }
    if (p.jobs !== undefined) {
      setJobs(p.jobs.split(',').filter(Boolean).map(Number).filter(function (n) { return n >= 0; }));
    }
    if (p.at !== undefined) S.at = Number(p.at);
    S.only = p.only !== '0';
    var w = S.jobs || S.at !== null ? focusWindow(S.at) : [0, Math.max(1, T.end)];
    S.t0 = p.from !== undefined ? Number(p.from) : w[0];
    S.t1 = p.to !== undefined ? Number(p.to) : w[1];
    if (!(S.t1 > S.t0)) S.t1 = S.t0 + 1;
    document.getElementById('tl-only').checked = S.only;
    document.getElementById('tl-violation').value = S.vio ? S.vio.name : '';
    var callout = document.getElementById('tl-callout');
    callout.hidden = !S.vio;
    callout.textContent = S.vio ? S.vio.name + ' violated at ' + ms(S.vio.at) + ': ' + S.vio.message : '';
    if (p.full === '1') { document.body.classList.add('tl-full'); }
    render();
  }

  function fromHash() {
    var h = location.hash;
    if (h.indexOf('#tl') !== 0) return null;
    var p = {}, q = h.split('?')[1] || '';
    q.split('&').forEach(function (kv) {
      var i = kv.indexOf('=');
      if (i > 0) p[decodeURIComponent(kv.slice(0, i))] = decodeURIComponent(kv.slice(i + 1));
    });
    return p;
  }

  function zoom(f, center) {
    var span = S.t1 - S.t0, c = center === undefined ? (S.t0 + S.t1) / 2 : center, r = (c - S.t0) / span;
    var s = Math.min(Math.max(span * f, 0.05), Math.max(1, T.end) * 1.2);
    S.t0 = c - r * s; S.t1 = S.t0 + s; render();
  }

  function wire() {
    var sel = document.getElementById('tl-violation');
    V.forEach(function (v) {
      var o = document.createElement('option');
      o.value = v.name; o.textContent = v.name + ' (at ' + ms(v.at) + (v.jobs.length ? ', job-' + v.jobs[0] : '') + ')';
      sel.appendChild(o);
    });
    sel.onchange = function () { apply(sel.value ? { v: sel.value } : {}); };
    document.getElementById('tl-jobs').onchange = function (e) {
      var list = (e.target.value.match(/\d+/g) || []).map(Number);
      apply({ jobs: list.join(','), only: S.only ? '1' : '0' });
    };
    document.getElementById('tl-only').onchange = function (e) { S.only = e.target.checked; render(); };
    document.getElementById('tl-in').onclick = function () { zoom(0.5); };
    document.getElementById('tl-out').onclick = function () { zoom(2); };
    document.getElementById('tl-all').onclick = function () { S.t0 = 0; S.t1 = Math.max(1, T.end); render(); };
    document.getElementById('tl-full').onclick = function () { document.body.classList.toggle('tl-full'); render(); };
    box.addEventListener('wheel', function (e) {
      e.preventDefault();
      var r = svg.getBoundingClientRect(), t = S.t0 + (e.clientX - r.left - GUTTER) / (r.width - GUTTER - RIGHT) * (S.t1 - S.t0);
      zoom(e.deltaY > 0 ? 1.25 : 0.8, t);
    }, { passive: false });
    var drag = null;
    box.addEventListener('mousedown', function (e) { drag = { x: e.clientX, t0: S.t0, t1: S.t1 }; box.classList.add('dragging'); });
    window.addEventListener('mouseup', function () { drag = null; box.classList.remove('dragging'); });
    window.addEventListener('mousemove', function (e) {
      if (!drag) return;
      var dt = (e.clientX - drag.x) / (svg.getBoundingClientRect().width - GUTTER - RIGHT) * (drag.t1 - drag.t0);
      S.t0 = drag.t0 - dt; S.t1 = drag.t1 - dt; render();
    });
    window.addEventListener('hashchange', function () {
      var p = fromHash();
      if (p) { apply(p); document.getElementById('timeline').scrollIntoView(); }
    });
    window.addEventListener('resize', render);
  }

  function drawKey() {
    var key = document.getElementById('tl-key'), i = 0;
    Object.keys(KIND).forEach(function (k) {
      var g = el('g', { transform: 'translate(' + (14 + (i % 6) * 180) + ',' + (14 + Math.floor(i / 6) * 20) + ')' }, key);
      symbol(g, KIND[k][0], KIND[k][1]);
      el('text', { x: 14, y: 4, 'font-size': 12, fill: '#333' }, g).textContent = KIND[k][2];
      i++;
    });
    key.setAttribute('height', 20 + Math.ceil(i / 6) * 20);
  }

  wire();
  drawKey();
  var first = V.filter(function (v) { return v.jobs.length; })[0];
  var p = fromHash() || (first ? { v: first.name } : {});
  apply(p);
  if (fromHash() && p.full !== '1') document.getElementById('timeline').scrollIntoView();
})();
