// The gpuweave dashboard: polls /api/v1/dashboard once a second and draws it. No libraries, no network beyond
// this server. The token comes from the URL fragment (#token=gw_...; never sent to the server in a URL) or the
// form, and is kept in this browser's localStorage.
"use strict";

const PALETTE = ["#1d5fbf", "#0a7d32", "#b56b00", "#8a4bbf", "#b00020", "#00838f", "#6d4c41", "#c2185b"];
const SVG_NS = "http://www.w3.org/2000/svg";
let token = "";

function readToken() {
  const match = /token=([^&]+)/.exec(window.location.hash);
  if (match) {
    localStorage.setItem("gpuweave-token", decodeURIComponent(match[1]));
    history.replaceState(null, "", window.location.pathname);
  }
  return localStorage.getItem("gpuweave-token") || "";
}

function el(tag, attrs, text) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  if (text !== undefined) node.textContent = text;
  return node;
}

function colour(jobId) {
  return PALETTE[Math.abs(Number(jobId) || 0) % PALETTE.length];
}

function fillTable(id, rows, cells) {
  const body = document.querySelector(`#${id} tbody`);
  body.replaceChildren(...rows.map((row) => {
    const tr = el("tr", { "data-job": row.id === undefined ? "" : String(row.id) });
    for (const [value, cls] of cells(row)) tr.appendChild(el("td", cls ? { class: cls } : {}, value));
    return tr;
  }));
}

const pct = (x) => `${Math.round(100 * x)}%`;
// A job's GPUs as people read them: "2", or "1 × 0.5" for a share of one GPU (a service with a task placement)
const gpusText = (j) => (j.gpu_milli && j.gpu_milli < 1000 ? `${j.gpus} × ${j.gpu_milli / 1000}` : `${j.gpus}`);
const where = (p) => (p || []).map((x) => `${x.node}:${x.gpus}`).join(" ") || "–";

// One energy unit and one currency for the whole page. The unit follows the magnitude of the cluster's energy so
// far (J, kJ or kWh, the largest figure on the page) and every energy on the page is written in it, with the unit;
// a small nonzero value keeps three significant digits instead of reading 0.0000. The currency is the cluster
// spec's (`currency`, "$" unless the spec names another), as the API's dashboard answer gives it.
let CURRENCY = "$";
let ENERGY_UNIT = [1, "J"];

function chooseUnits(totals) {
  CURRENCY = typeof totals.currency === "string" && totals.currency ? totals.currency : "$";
  const total = Math.abs(Number(totals.energy_j ?? totals.energy_kwh * 3.6e6) || 0);
  ENERGY_UNIT = total >= 3.6e6 ? [3.6e6, "kWh"] : total >= 1000 ? [1000, "kJ"] : [1, "J"];
}

function number(x) {
  const a = Math.abs(x);
  if (a === 0 || !Number.isFinite(a)) return "0";
  if (a >= 100) return Math.round(x).toLocaleString("en-US");
  if (a >= 10) return x.toFixed(1);
  if (a >= 1) return x.toFixed(2);
  return x.toFixed(Math.min(12, Math.ceil(-Math.log10(a)) + 2));  // three significant digits
}

function energy(joules) {
  const [scale, unit] = ENERGY_UNIT;
  return `${number((Number(joules) || 0) / scale)} ${unit}`;
}

function money(value) {
  const c = Number(value) || 0;
  const a = Math.abs(c);
  const text = a >= 1 || a === 0 ? c.toFixed(2) : number(c);
  return `${CURRENCY}${text}`;
}

function drawCards(data) {
  const busy = data.nodes.reduce((s, n) => s + n.busy, 0);
  document.getElementById("busy").textContent = `${busy} / ${data.totals.gpus}`;
  document.getElementById("waiting").textContent = data.queue.total;
  document.getElementById("runningCount").textContent = data.running.total;
  document.getElementById("power").textContent = `${(data.totals.power_w / 1000).toFixed(2)} kW`;
  const totalJ = data.totals.energy_j ?? data.totals.energy_kwh * 3.6e6;
  document.getElementById("energy").textContent = energy(totalJ);
  document.getElementById("cost").textContent = money(data.totals.cost);
  document.getElementById("who").textContent = `${data.user.name}${data.user.admin ? " (admin)" : ""}`;
  const p = data.policy || {};
  document.getElementById("policy").textContent = p.name ? `policy: ${p.name}` : "";
}

function drawNodes(nodes) {
  const box = document.getElementById("nodes");
  box.replaceChildren(...nodes.map((n) => {
    const div = el("div", { class: "node", "data-node": n.name });
    div.appendChild(el("div", {}, `${n.name} · ${n.gpu_type} · ${n.busy}/${n.gpus}`));
    const gpus = el("div", { class: "gpus" });
    // Each GPU cell lists the jobs on it: whole GPUs one job a cell, shares of a GPU packed into cells in turn
    // (the database keeps a job's node, not which of its GPUs: the picture shows how full the node is).
    const slots = [];
    let open = null;
    for (const j of n.jobs) {
      if ((j.share ?? 1) < 1) {
        if (!open || open.used + j.share > 1 + 1e-9) slots.push(open = { jobs: [], used: 0 });
        open.jobs.push(j);
        open.used += j.share;
      } else for (let i = 0; i < j.gpus; i++) slots.push({ jobs: [j], used: 1 });
    }
    for (let i = 0; i < n.gpus; i++) {
      const s = slots[i];
      const names = s ? s.jobs.map((j) => `job ${j.id ?? "(another user's)"} ${j.name ?? ""}`.trim()) : [];
      const cell = el("div", { class: "gpu", title: s ? names.join(", ") : "free" },
        s ? s.jobs.map((j) => j.id ?? "·").join("+") : "");
      if (s) cell.style.background = s.jobs[0].id === null ? "#9aa3b5" : colour(s.jobs[0].id);
      gpus.appendChild(cell);
    }
    div.appendChild(gpus);
    return div;
  }));
}

// Nice steps for axis ticks: about `count` ticks of 1, 2 or 5 times a power of ten (GPU counts: whole numbers).
function niceStep(span, count) {
  const raw = span / Math.max(count, 1);
  const power = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * power).find((s) => s >= raw) || 10 * power;
  return Math.max(1, step);
}

// Time ticks land on round wall-clock times, spaced so that about six fit.
const TIME_STEPS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400];

function timeTicks(t0, t1, count) {
  const step = TIME_STEPS.find((s) => (t1 - t0) / s <= count) || TIME_STEPS[TIME_STEPS.length - 1];
  const ticks = [];
  for (let t = Math.ceil(t0 / step) * step; t <= t1 + 1e-9; t += step) ticks.push(t);
  return { ticks, step };
}

function clock(seconds, withSeconds) {
  const d = new Date(seconds * 1000);
  const two = (n) => String(n).padStart(2, "0");
  return `${two(d.getHours())}:${two(d.getMinutes())}${withSeconds ? `:${two(d.getSeconds())}` : ""}`;
}

function svgNode(tag, attrs, text) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  if (text !== undefined) node.textContent = text;
  return node;
}

function drawPlot(series, totalGpus, now) {
  const svg = document.getElementById("plot");
  // Drawn at the element's own size (no stretching), so labels keep their shape at any window width.
  const W = Math.max(300, Math.round(svg.clientWidth || 900)), H = Math.max(120, Math.round(svg.clientHeight || 220));
  svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
  const left = 44, right = 14, top = 10, bottom = 36;
  const total = Math.max(totalGpus, 1);
  const y = (v) => H - bottom - (v / total) * (H - top - bottom);
  const nodes = [];
  const parts = [];
  const types = [...new Set(series.flatMap((s) => Object.keys(s.busy)))];
  // y axis: busy GPUs in nice steps, the cluster's total on top; a grid line at each.
  const yStep = niceStep(total, 4);
  const yTicks = [];
  for (let v = 0; v < total - yStep / 4; v += yStep) yTicks.push(v);
  yTicks.push(total);
  for (const v of yTicks) {
    nodes.push(svgNode("line", { x1: left, x2: W - right, y1: y(v), y2: y(v), stroke: "#e3e6ec", class: "grid" }));
    nodes.push(svgNode("text", { x: left - 6, y: y(v) + 4, "text-anchor": "end", class: "tick y-tick" }, String(v)));
  }
  const mid = (top + H - bottom) / 2;
  nodes.push(svgNode("text", { x: 12, y: mid, "text-anchor": "middle", class: "axis-label",
    transform: `rotate(-90 12 ${mid})` }, "busy GPUs"));
  if (series.length >= 1) {
    // The last minute at least, ending now: the newest sample's value holds until now.
    const t1 = Math.max(series[series.length - 1].at, now || 0);
    const t0 = Math.min(series[0].at, t1 - 60);
    const x = (t) => left + ((t - t0) / (t1 - t0)) * (W - left - right);
    // x axis: wall-clock times (HH:MM, or HH:MM:SS when ticks are under a minute apart).
    const { ticks, step } = timeTicks(t0, t1, Math.max(2, Math.floor((W - left - right) / 110)));
    for (const t of ticks) {
      nodes.push(svgNode("line", { x1: x(t), x2: x(t), y1: H - bottom, y2: H - bottom + 5, stroke: "#99a" }));
      nodes.push(svgNode("text", { x: x(t), y: H - bottom + 18, "text-anchor": "middle", class: "tick x-tick" },
        clock(t, step < 60)));
    }
    // A step function: busy GPUs hold their value until the next sample.
    const line = (value) => series.map((s, i) => (i ? `H${x(s.at).toFixed(1)}V` : `M${x(s.at).toFixed(1)},`) +
      y(value(s)).toFixed(1)).join(" ") + ` H${x(t1).toFixed(1)}`;
    parts.push([line((s) => Object.values(s.busy).reduce((a, b) => a + b, 0)), "#1d2330", 2.5]);
    types.forEach((t, i) => parts.push([line((s) => s.busy[t] || 0), PALETTE[i % PALETTE.length], 1.5]));
  }
  nodes.push(svgNode("text", { x: W - right, y: H - 4, "text-anchor": "end", class: "axis-label" }, "time"));
  nodes.push(svgNode("path", { d: `M${left},${top} L${left},${H - bottom} L${W - right},${H - bottom}`, stroke: "#99a",
    fill: "none", class: "axis" }));
  for (const [d, stroke, width] of parts) {
    nodes.push(svgNode("path", { d, stroke, "stroke-width": width, fill: "none", class: "series" }));
  }
  svg.replaceChildren(...nodes);
  const legend = document.getElementById("legend");
  legend.replaceChildren(el("span", {}, "— all GPUs"),
    ...types.map((t, i) => { const s = el("span", {}, `— ${t}`); s.style.color = PALETTE[i % PALETTE.length]; return s; }));
}

function draw(data) {
  chooseUnits(data.totals);
  drawCards(data);
  drawNodes(data.nodes);
  drawPlot(data.series, data.totals.gpus, data.now);
  fillTable("running", data.running.jobs, (j) => [[j.id], [j.name], [j.user], [j.state, `state-${j.state}`],
    [gpusText(j)], [where(j.placement)], [pct(j.progress)]]);
  fillTable("queue", data.queue.jobs, (j) => [[j.id], [j.name], [j.user], [j.state, `state-${j.state}`], [gpusText(j)],
    [pct(j.progress)], [j.held]]);
  fillTable("users", data.users, (u) => [[u.name], [u.waiting], [u.running], [u.gpus], [u.done],
    [energy(u.energy_j), "num"], [money(u.cost), "num"]]);
  fillTable("recent", data.recent.jobs, (j) => [[j.id], [j.name], [j.user], [j.state, `state-${j.state}`],
    [energy(j.energy_j), "num"], [money(j.cost), "num"]]);
  const list = document.getElementById("decisions");
  list.replaceChildren(...data.decisions.map((d) => {
    const when = new Date(d.at * 1000).toLocaleTimeString();
    const x = d.detail;
    const text = d.kind === "decision" ? `${when} start ${x.start}, move ${x.move}, stop ${x.stop} (${(1000 * x.seconds).toFixed(2)} ms)`
      : `${when} ${d.kind} ${x.name || x.error || ""}`;
    return el("li", { title: text }, text);  // the whole line wraps; the tooltip repeats it
  }));
  document.getElementById("status").textContent = `updated ${new Date().toLocaleTimeString()}`;
}

async function refresh() {
  if (!token) return;
  try {
    const response = await fetch("/api/v1/dashboard", { headers: { Authorization: `Bearer ${token}` } });
    if (response.status === 401) {
      localStorage.removeItem("gpuweave-token");
      token = "";
      showLogin("that token was refused: enter another");
      return;
    }
    if (response.status === 503) {  // gpuweave serve is recovering from its last run (see /healthz)
      const body = await response.json().catch(() => ({}));
      document.getElementById("status").textContent = body.detail || "the service is starting";
      return;
    }
    if (!response.ok) {
      document.getElementById("status").textContent = `the service answered ${response.status}`;
      return;
    }
    draw(await response.json());
  } catch (err) {
    document.getElementById("status").textContent = `service unreachable (${err.message})`;
  }
}

function showLogin(message) {
  document.getElementById("status").textContent = message;
  document.getElementById("login").hidden = false;
}

document.getElementById("login").addEventListener("submit", (event) => {
  event.preventDefault();
  token = document.getElementById("token").value.trim();
  localStorage.setItem("gpuweave-token", token);
  document.getElementById("login").hidden = true;
  refresh();
});

token = readToken();
if (!token) showLogin("enter an API token");
refresh();
setInterval(refresh, 1000);
