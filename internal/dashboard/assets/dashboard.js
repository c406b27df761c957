// sloserve live dashboard: polls <path>/data, lists every model in an overview table (state,
// rate, p99, attainment, instances of its latest sample) and draws six charts per model with
// ECharts. The filter box (also ?filter=... in the URL) keeps the models whose name contains
// its text or whose state is its text; hidden models are not drawn. After every render each
// chart's element carries data-points (its number of non-null points) and <body> carries
// data-updates; data-ready="true" and window.__dashboardReady are set once every shown chart
// has at least one point. The browser test reads these.
(function () {
  'use strict';

  var body = document.body;
  var path = body.dataset.path;
  var refreshMS = Math.max(500, Number(body.dataset.refreshMs) || 1000);
  var authNeeded = body.dataset.auth === 'true';
  var statusEl = document.getElementById('status');
  var statusText = document.getElementById('status-text');
  var noticeEl = document.getElementById('notice');
  var modelsEl = document.getElementById('models');
  var overviewEl = document.getElementById('overview');
  var rowsEl = document.getElementById('overview-rows');
  var filterEl = document.getElementById('filter');
  var shownEl = document.getElementById('shown');
  var lastData = null;
  var views = {}; // model name → {section, kpis, charts}
  var updates = 0;

  // The bearer token comes from the URL fragment (#token=...), which is never sent to the
  // server, and is kept for this tab only.
  var token = '';
  (function () {
    var m = /(?:^|[#&])token=([^&]*)/.exec(location.hash);
    if (m) {
      token = decodeURIComponent(m[1]);
      try { sessionStorage.setItem('sloserve.token', token); } catch (e) { /* storage disabled */ }
      history.replaceState(null, '', location.pathname + location.search);
    } else {
      try { token = sessionStorage.getItem('sloserve.token') || ''; } catch (e) { /* storage disabled */ }
    }
  })();

  var KINDS = [
    { kind: 'arrival', title: 'Arrival rate', unit: 'req/s' },
    { kind: 'instances', title: 'Instances by type · tier · state', unit: 'count' },
    { kind: 'batch', title: 'Batch size', unit: 'requests' },
    { kind: 'latency', title: 'Latency percentiles', unit: 'ms' },
    { kind: 'attainment', title: 'SLO attainment', unit: '%' },
    { kind: 'cost', title: 'Cost so far', unit: 'USD' }
  ];

  var PALETTE = ['#2f6fde', '#e8710a', '#1a7f37', '#9334e6', '#d01884', '#12858a', '#b06000', '#5f6368', '#c5221f', '#7cb342'];

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function setStatus(kind, text) {
    statusEl.className = 'status ' + kind;
    statusText.textContent = text;
  }

  function showNotice(text) {
    noticeEl.textContent = text;
    noticeEl.hidden = !text;
  }

  function pairs(ts, ys, scale) {
    var out = new Array(ts.length);
    for (var i = 0; i < ts.length; i++) {
      var y = ys[i];
      out[i] = [ts[i], y === null || y === undefined ? null : y * (scale || 1)];
    }
    return out;
  }

  function shift(ts, byMS) {
    if (!byMS) return ts;
    return ts.map(function (t) { return t + byMS; });
  }

  function countPoints(ys) {
    var n = 0;
    for (var i = 0; i < ys.length; i++) if (ys[i] !== null && ys[i] !== undefined) n++;
    return n;
  }

  function last(ys) {
    for (var i = ys.length - 1; i >= 0; i--) if (ys[i] !== null && ys[i] !== undefined) return ys[i];
    return null;
  }

  // latest is the value of the newest sample: null when that window had none (idle), never an
  // older value left over.
  function latest(ys) {
    if (!ys.length) return null;
    var y = ys[ys.length - 1];
    return y === undefined ? null : y;
  }

  function fmt(v, digits) {
    if (v === null || v === undefined) return '–';
    return Number(v).toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
  }

  function baseOption(unit) {
    return {
      animation: false,
      color: PALETTE,
      textStyle: { fontFamily: 'system-ui, "DejaVu Sans", sans-serif' },
      grid: { left: 52, right: 18, top: 34, bottom: 28 },
      legend: { top: 4, type: 'scroll', itemWidth: 14, itemHeight: 8, textStyle: { fontSize: 11 } },
      tooltip: { trigger: 'axis', confine: true, valueFormatter: function (v) { return v === null || v === undefined ? '–' : fmt(v, 3) + ' ' + unit; } },
      xAxis: { type: 'time', axisLabel: { fontSize: 10, hideOverlap: true }, splitLine: { show: false } },
      yAxis: { type: 'value', scale: false, axisLabel: { fontSize: 10 }, splitLine: { lineStyle: { color: '#eceef2' } } },
      series: []
    };
  }

  function line(name, data, extra) {
    var s = { name: name, type: 'line', data: data, showSymbol: false, connectNulls: false, lineStyle: { width: 1.6 } };
    for (var k in extra) s[k] = extra[k];
    return s;
  }

  function makeView(m) {
    var section = el('section', 'model');
    section.id = 'model-' + m.name;
    section.dataset.model = m.name;
    var h2 = el('h2', null, m.name);
    var sloSpan = el('span', 'slo');
    h2.appendChild(sloSpan);
    section.appendChild(h2);
    var kpiBox = el('div', 'kpis');
    var kpis = {};
    [['arrival', 'Arrival'], ['forecast', 'Forecast'], ['instances', 'Ready instances'],
      ['p99', 'p99 latency'], ['attainment', 'Attainment'], ['cost', 'Cost so far']].forEach(function (k) {
      var box = el('div', 'kpi');
      box.appendChild(el('div', 'label', k[1]));
      var v = el('div', 'value', '–');
      v.dataset.kpi = k[0];
      box.appendChild(v);
      kpiBox.appendChild(box);
      kpis[k[0]] = v;
    });
    section.appendChild(kpiBox);
    var grid = el('div', 'grid');
    var charts = {};
    KINDS.forEach(function (k) {
      var card = el('div', 'card');
      var h3 = el('h3', null, k.title + ' ');
      h3.appendChild(el('span', 'unit', '(' + k.unit + ')'));
      card.appendChild(h3);
      var div = el('div', 'chart');
      div.dataset.chart = k.kind;
      div.dataset.model = m.name;
      div.dataset.points = '0';
      card.appendChild(div);
      grid.appendChild(card);
      charts[k.kind] = { el: div, chart: null, unit: k.unit };
    });
    section.appendChild(grid);
    modelsEl.appendChild(section);
    KINDS.forEach(function (k) {
      // SVG renderer: crisp at any zoom, and the drawn paths are visible in the DOM.
      charts[k.kind].chart = echarts.init(charts[k.kind].el, null, { renderer: 'svg' });
    });
    return { section: section, sloSpan: sloSpan, kpis: kpis, charts: charts };
  }

  function setChart(c, option, points) {
    c.chart.setOption(option, { notMerge: true, lazyUpdate: false });
    c.el.dataset.points = String(points);
  }

  function renderModel(v, m, ts) {
    var thr = m.slo.threshold_ms, target = m.slo.target;
    v.sloSpan.textContent = 'SLO: ' + fmt(target * 100, 1) + ' % within ' + fmt(thr, 0) + ' ms';

    // Arrival rate and forecast.
    var o = baseOption('req/s');
    o.series = [
      line('arrival', pairs(ts, m.arrival_rps), { areaStyle: { opacity: 0.12 } }),
      line('forecast', pairs(shift(ts, (m.forecast_horizon_s || 0) * 1000), m.forecast_rps), { lineStyle: { width: 1.6, type: 'dashed' } })
    ];
    setChart(v.charts.arrival, o, countPoints(m.arrival_rps));

    // Instances by type, tier and state, stacked.
    o = baseOption('instances');
    o.yAxis.minInterval = 1;
    o.legend.type = 'plain';
    o.legend.itemGap = 6;
    o.grid.top = m.instances.length > 2 ? 56 : 34;
    var instPoints = 0, ready = 0;
    o.series = m.instances.map(function (s) {
      instPoints = Math.max(instPoints, countPoints(s.count));
      if (s.state === 'ready') ready += latest(s.count) || 0;
      var dim = s.state !== 'ready';
      return line(s.type + ' ' + s.tier + (dim ? ' ' + s.state : ''), pairs(ts, s.count), {
        stack: 'instances', step: 'end', areaStyle: { opacity: dim ? 0.18 : 0.5 },
        lineStyle: { width: 1, type: dim ? 'dashed' : 'solid' }
      });
    });
    setChart(v.charts.instances, o, instPoints);

    // Batch sizes: mean and current maximum.
    o = baseOption('requests');
    o.series = [
      line('mean', pairs(ts, m.batch_mean), { areaStyle: { opacity: 0.12 } }),
      line('max', pairs(ts, m.batch_max), { step: 'end', lineStyle: { width: 1.4, type: 'dashed' } })
    ];
    setChart(v.charts.batch, o, countPoints(m.batch_mean));

    // Latency percentiles against the SLO threshold.
    o = baseOption('ms');
    // Logarithmic, so that a spike far above the SLO leaves the threshold region readable.
    o.yAxis.type = 'log';
    o.yAxis.logBase = 10;
    o.yAxis.min = function (e) { return Math.pow(10, Math.floor(Math.log10(Math.max(1e-3, Math.min(e.min, thr))))); };
    o.yAxis.max = function (e) { return Math.pow(10, Math.ceil(Math.log10(Math.max(e.max, thr * 1.15)))); };
    o.series = [
      line('p50', pairs(ts, m.latency_ms.p50)),
      line('p95', pairs(ts, m.latency_ms.p95)),
      line('p99', pairs(ts, m.latency_ms.p99), {
        markLine: {
          symbol: 'none', silent: true, lineStyle: { color: '#c62828', type: 'solid', width: 1.5 },
          label: { formatter: 'SLO ' + fmt(thr, 0) + ' ms', position: 'insideEndTop', color: '#c62828' },
          data: [{ yAxis: thr }]
        }
      })
    ];
    setChart(v.charts.latency, o, countPoints(m.latency_ms.p99));

    // Attainment against the SLO target.
    o = baseOption('%');
    var att = m.attainment, minAtt = target;
    for (var i = 0; i < att.length; i++) if (att[i] !== null && att[i] < minAtt) minAtt = att[i];
    o.yAxis.min = Math.max(0, Math.floor((minAtt * 100 - 2) / 5) * 5);
    o.yAxis.max = 100;
    o.series = [
      line('attainment', pairs(ts, att, 100), {
        areaStyle: { opacity: 0.1 },
        markLine: {
          symbol: 'none', silent: true, lineStyle: { color: '#c62828', type: 'solid', width: 1.5 },
          label: { formatter: 'target ' + fmt(target * 100, 1) + ' %', position: 'insideEndBottom', color: '#c62828' },
          data: [{ yAxis: target * 100 }]
        }
      })
    ];
    setChart(v.charts.attainment, o, countPoints(att));

    // Cost so far by tier, stacked.
    o = baseOption('USD');
    o.series = [
      line('vm', pairs(ts, m.cost_usd.vm), { stack: 'cost', areaStyle: { opacity: 0.4 } }),
      line('serverless', pairs(ts, m.cost_usd.serverless), { stack: 'cost', areaStyle: { opacity: 0.4 } })
    ];
    setChart(v.charts.cost, o, countPoints(m.cost_usd.total));

    // Headline numbers, from the newest sample: a window without requests is idle, not the
    // attainment of an older window.
    var p99 = latest(m.latency_ms.p99), a = latest(att);
    v.kpis.arrival.textContent = fmt(latest(m.arrival_rps), 1) + ' /s';
    v.kpis.forecast.textContent = fmt(latest(m.forecast_rps), 1) + ' /s';
    v.kpis.instances.textContent = fmt(ready, 0);
    v.kpis.p99.textContent = p99 === null ? 'idle' : fmt(p99, 1) + ' ms';
    v.kpis.p99.className = 'value ' + (p99 === null ? 'idle' : p99 <= thr ? 'ok' : 'bad');
    v.kpis.attainment.textContent = a === null ? 'idle' : fmt(a * 100, 2) + ' %';
    v.kpis.attainment.className = 'value ' + (a === null ? 'idle' : a >= target ? 'ok' : 'bad');
    v.kpis.cost.textContent = '$' + fmt(last(m.cost_usd.total), 4);
  }

  // matches says whether a model (name, state) passes the filter text.
  function matches(name, state) {
    var f = filterEl.value.trim().toLowerCase();
    return !f || name.toLowerCase().indexOf(f) >= 0 || state === f;
  }

  function stateOf(data, name) {
    for (var i = 0; i < (data.overview || []).length; i++) if (data.overview[i].name === name) return data.overview[i].state;
    return '';
  }

  function renderOverview(rows) {
    overviewEl.hidden = rows.length === 0;
    rowsEl.textContent = '';
    var shown = 0;
    rows.forEach(function (o) {
      var tr = el('tr', o.state);
      tr.dataset.model = o.name;
      tr.dataset.state = o.state;
      tr.hidden = !matches(o.name, o.state);
      if (!tr.hidden) shown++;
      var name = el('td');
      var a = el('a', null, o.name);
      a.href = '#model-' + o.name;
      name.appendChild(a);
      tr.appendChild(name);
      tr.appendChild(el('td', 'state', o.state));
      var idle = o.state === 'idle';
      tr.appendChild(el('td', 'num', fmt(o.arrival_rps, 1) + ' /s'));
      tr.appendChild(el('td', 'num', idle ? 'idle' : o.p99_ms === null ? '–' : fmt(o.p99_ms, 1) + ' ms'));
      tr.appendChild(el('td', 'num', idle ? 'idle' : o.attainment === null ? '–' : fmt(o.attainment * 100, 2) + ' %'));
      tr.appendChild(el('td', 'num', o.ready + ' ready' + (o.instances > o.ready ? ' / ' + o.instances : '')));
      tr.appendChild(el('td', null, fmt(o.slo.target * 100, 1) + ' % ≤ ' + fmt(o.slo.threshold_ms, 0) + ' ms'));
      rowsEl.appendChild(tr);
    });
    shownEl.textContent = shown + ' of ' + rows.length + ' models';
  }

  function render(data) {
    lastData = data;
    var ts = data.t_ms;
    renderOverview(data.overview || []);
    data.models.forEach(function (m) {
      var show = matches(m.name, stateOf(data, m.name));
      if (!show) {
        if (views[m.name]) views[m.name].section.hidden = true;
        return; // hidden models are not drawn
      }
      var fresh = !views[m.name];
      if (fresh) views[m.name] = makeView(m);
      var v = views[m.name];
      if (v.section.hidden) {
        v.section.hidden = false;
        Object.keys(v.charts).forEach(function (k) { v.charts[k].chart.resize(); });
      }
      renderModel(v, m, ts);
    });
    updates++;
    body.dataset.updates = String(updates);
    var ready = data.models.length > 0;
    document.querySelectorAll('section.model:not([hidden]) .chart').forEach(function (c) {
      if (Number(c.dataset.points) < 1) ready = false;
    });
    if (ready) {
      body.dataset.ready = 'true';
      window.__dashboardReady = true;
    }
    var when = ts.length ? new Date(ts[ts.length - 1]).toLocaleTimeString() : 'no samples yet';
    if (data.last_error) {
      setStatus('error', 'source failing: ' + data.last_error + ' (last good sample ' + when + ')');
    } else {
      setStatus('live', 'live · ' + ts.length + ' samples · every ' + data.interval_s + ' s · ' + when);
    }
    showNotice(data.models.length ? '' : 'No model has reported yet.');
  }

  function poll() {
    var headers = { 'Accept': 'application/json' };
    if (token) headers['Authorization'] = 'Bearer ' + token;
    fetch(path + '/data', { headers: headers, cache: 'no-store' }).then(function (res) {
      if (res.status === 401) {
        setStatus('error', 'unauthorized');
        showNotice(authNeeded || token
          ? 'This dashboard needs a token: open ' + location.pathname + '#token=YOUR_TOKEN'
          : 'Unauthorized.');
        return null;
      }
      if (!res.ok) throw new Error('HTTP ' + res.status);
      return res.json();
    }).then(function (data) {
      if (data) render(data);
    }).catch(function (err) {
      setStatus('error', 'disconnected: ' + err.message);
    }).then(function () {
      setTimeout(poll, refreshMS);
    });
  }

  (function () {
    var m = /[?&]filter=([^&]*)/.exec(location.search);
    if (m) filterEl.value = decodeURIComponent(m[1].replace(/\+/g, ' '));
  })();
  filterEl.addEventListener('input', function () {
    var q = filterEl.value.trim();
    history.replaceState(null, '', location.pathname + (q ? '?filter=' + encodeURIComponent(q) : '') + location.hash);
    if (lastData) render(lastData);
  });

  window.addEventListener('resize', function () {
    Object.keys(views).forEach(function (name) {
      var cs = views[name].charts;
      Object.keys(cs).forEach(function (k) { cs[k].chart.resize(); });
    });
  });

  poll();
})();
