// Tern's status page: polls /status.json every two seconds and draws
// what it says. After each drawing it writes what it drew into the DOM
// (data-points and data-last on the chart, data-rcode, data-name and
// data-origin on the table rows), which cmd/tern's browser test reads.
"use strict";
(function () {
  const $ = (id) => document.getElementById(id);
  const num = new Intl.NumberFormat("en");
  const SPAN = 600000; // the chart's width: ten minutes, in ms

  function el(tag, text, cls) {
    const e = document.createElement(tag);
    if (text !== undefined) e.textContent = text;
    if (cls) e.className = cls;
    return e;
  }
  function pct(part, whole) {
    return whole > 0 ? (100 * part / whole).toFixed(part === whole || 100 * part / whole >= 10 ? 0 : 1) + "%" : "–";
  }
  function bar(frac, warn) {
    const b = el("div", undefined, warn ? "bar warn" : "bar");
    const s = el("span");
    s.style.width = Math.max(0, Math.min(100, 100 * frac)).toFixed(1) + "%";
    b.appendChild(s);
    return b;
  }
  function ago(ms) {
    const s = Math.max(0, Math.round(ms / 1000));
    if (s < 90) return s + " s ago";
    if (s < 5400) return Math.round(s / 60) + " min ago";
    if (s < 129600) return Math.round(s / 3600) + " h ago";
    return Math.round(s / 86400) + " d ago";
  }
  function fill(table, rows, empty) {
    const tb = table.tBodies[0];
    tb.replaceChildren();
    if (rows.length === 0) {
      const tr = el("tr");
      const td = el("td", empty, "empty");
      td.colSpan = 6;
      tr.appendChild(td);
      tb.appendChild(tr);
    }
    for (const r of rows) tb.appendChild(r);
  }
  function row(cells) {
    const tr = el("tr");
    for (const c of cells) tr.appendChild(c);
    return tr;
  }
  function cell(text, cls) { return el("td", text, cls); }
  function barCell(frac, warn) {
    const td = el("td", undefined, "barcell");
    td.appendChild(bar(frac, warn));
    return td;
  }

  // A round step for about five grid lines up to max.
  function step(max) {
    const raw = max / 5;
    const p = Math.pow(10, Math.floor(Math.log10(raw)));
    for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= raw) return m * p;
    return 10 * p;
  }

  function drawChart(rate) {
    const c = $("chart");
    const css = getComputedStyle(document.documentElement);
    const dpr = window.devicePixelRatio || 1;
    const w = c.clientWidth, h = c.clientHeight;
    c.width = Math.round(w * dpr);
    c.height = Math.round(h * dpr);
    const g = c.getContext("2d");
    g.scale(dpr, dpr);
    g.clearRect(0, 0, w, h);
    const left = 48, right = 8, top = 8, bottom = 22;
    const pw = w - left - right, ph = h - top - bottom;
    let max = 1;
    for (const p of rate) max = Math.max(max, p.qps);
    const st = step(max);
    max = Math.ceil(max / st) * st;
    const end = rate.length ? rate[rate.length - 1].t : 0;
    const x = (t) => left + pw - (end - t) / SPAN * pw;
    const y = (v) => top + ph - v / max * ph;

    g.font = "11px system-ui, sans-serif";
    g.fillStyle = css.getPropertyValue("--muted");
    g.strokeStyle = css.getPropertyValue("--line");
    g.lineWidth = 1;
    g.textAlign = "right";
    g.textBaseline = "middle";
    for (let v = 0; v <= max + st / 2; v += st) {
      const yy = Math.round(y(v)) + 0.5;
      g.beginPath(); g.moveTo(left, yy); g.lineTo(left + pw, yy); g.stroke();
      g.fillText(num.format(v), left - 6, yy);
    }
    g.textBaseline = "top";
    for (let m = 10; m >= 0; m -= 2) {
      g.textAlign = m === 10 ? "left" : m === 0 ? "right" : "center";
      g.fillText(m === 0 ? "now" : "-" + m + " min", left + pw - m * 60000 / SPAN * pw, top + ph + 6);
    }
    if (rate.length >= 2) {
      const line = (key, color, area) => {
        g.beginPath();
        rate.forEach((p, i) => (i ? g.lineTo : g.moveTo).call(g, x(p.t), y(p[key])));
        g.strokeStyle = color;
        g.lineWidth = 1.75;
        g.lineJoin = "round";
        g.stroke();
        if (area) {
          g.lineTo(x(end), y(0));
          g.lineTo(x(rate[0].t), y(0));
          g.closePath();
          g.fillStyle = area;
          g.fill();
        }
      };
      g.save();
      g.beginPath(); g.rect(left, top, pw, ph + 1); g.clip();
      // Errors first: where they are 0, the answered line covers them.
      line("errors", css.getPropertyValue("--warn"));
      line("qps", css.getPropertyValue("--accent"), css.getPropertyValue("--accent-fill"));
      g.restore();
    } else {
      g.fillStyle = css.getPropertyValue("--muted");
      g.textBaseline = "middle";
      g.fillText("collecting the first seconds…", left + pw / 2, top + ph / 2);
    }
    c.dataset.points = String(rate.length);
    c.dataset.last = rate.length ? String(rate[rate.length - 1].qps) : "";
  }

  function render(s) {
    const now = Date.parse(s.time);
    const rate = s.rate || [];
    let total = 0;
    for (const k in s.queries) total += s.queries[k];
    const rc = Object.entries(s.rcodes).filter((e) => e[1] > 0).sort((a, b) => b[1] - a[1]);
    const noerror = s.rcodes.NOERROR || 0;
    let dropped = 0;
    for (const k in s.dropped) dropped += s.dropped[k];

    // The cards' rate: the last ten seconds' average, steadier than
    // the last second's.
    const recent = rate.slice(-10);
    let rsum = 0;
    for (const p of recent) rsum += p.qps;
    $("qps").textContent = recent.length ? num.format(Math.round(10 * rsum / recent.length) / 10) : "–";
    $("total").textContent = num.format(total);
    $("errshare").textContent = pct(total - noerror, total);
    $("dropped").textContent = num.format(dropped);
    const lookups = s.cache_hits + s.cache_misses;
    $("cache-card").hidden = !s.resolver;
    $("cache").textContent = lookups ? pct(s.cache_hits, lookups) : "–";

    drawChart(rate);

    fill($("rcodes"), rc.map(([name, n]) => {
      const tr = row([cell(name), cell(num.format(n), "num"), cell(pct(n, total), "num"), barCell(n / total, name !== "NOERROR")]);
      tr.dataset.rcode = name;
      tr.dataset.count = String(n);
      return tr;
    }), "no queries yet");

    const tops = (list, attr) => {
      let sum = 0;
      for (const t of list) sum += t.count;
      const first = list.length ? list[0].count : 1;
      return list.map((t) => {
        const tr = row([cell(t.key, "key"), cell(pct(t.count, sum), "num"), barCell(t.count / first)]);
        tr.dataset[attr] = t.key;
        tr.title = t.key;
        return tr;
      });
    };
    fill($("names"), tops(s.top_names, "name"), "none sampled in the last minutes");
    fill($("clients"), tops(s.top_clients, "client"), "none sampled in the last minutes");
    $("names-note").textContent = "sampled, 1 query in " + s.sample_every;

    fill($("zones"), (s.zones || []).map((z) => {
      const last = z.last_event
        ? z.last_event + (z.last_error ? " failed: " + z.last_error : " ok") + ", " + ago(now - Date.parse(z.last_at))
        : "–";
      const tr = row([cell(z.origin, "key"), cell(z.role), cell(String(z.serial), "num"),
        cell(z.serving ? "serving" : "not serving", z.serving ? "state-ok" : "state-bad"),
        cell(num.format(z.queries), "num"), cell(last, z.last_error ? "state-bad" : "")]);
      tr.dataset.origin = z.origin;
      tr.dataset.serial = String(z.serial);
      return tr;
    }), "no zones");

    $("updated").textContent = "updated " + new Date(now).toLocaleTimeString();
    document.body.dataset.renders = String((Number(document.body.dataset.renders) || 0) + 1);
  }

  function poll() {
    fetch("/status.json", { cache: "no-store" })
      .then((r) => {
        if (!r.ok) throw new Error("HTTP " + r.status);
        return r.json();
      })
      .then(render)
      .catch((e) => { $("updated").textContent = "not updated: " + e.message; })
      .finally(() => setTimeout(poll, 2000));
  }
  poll();
})();
