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
const where = (p) => (p || []).map((x) => `${x.node}:${x.gpus}`).join(" ") || "–";

function drawCards(data) {
  const busy = data.nodes.reduce((s, n) => s + n.busy, 0);
  document.getElementById("busy").textContent = `${busy} / ${data.totals.gpus}`;
  document.getElementById("waiting").textContent = data.queue.total;
  document.getElementById("runningCount").textContent = data.running.total;
  document.getElementById("power").textContent = `${(data.totals.power_w / 1000).toFixed(2)} kW`;
  document.getElementById("energy").textContent = `${data.totals.energy_kwh.toFixed(3)} kWh`;
  document.getElementById("cost").textContent = `$${data.totals.cost.toFixed(3)}`;
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
    const slots = [];
    for (const j of n.jobs) for (let i = 0; i < j.gpus; i++) slots.push(j);
    for (let i = 0; i < n.gpus; i++) {
      const j = slots[i];
      const cell = el("div", { class: "gpu", title: j ? `job ${j.id ?? "(another user's)"} ${j.name ?? ""}` : "free" },
        j ? (j.id ?? "·") : "");
      if (j) cell.style.background = j.id === null ? "#9aa3b5" : colour(j.id);
      gpus.appendChild(cell);
    }
    div.appendChild(gpus);
    return div;
  }));
}

function drawPlot(series, totalGpus) {
  const svg = document.getElementById("plot");
  const W = 900, H = 220, pad = 28;
  const parts = [];
  const types = [...new Set(series.flatMap((s) => Object.keys(s.busy)))];
  if (series.length >= 1) {
    const t0 = series[0].at, t1 = Math.max(series[series.length - 1].at, t0 + 1);
    const x = (t) => pad + ((t - t0) / (t1 - t0)) * (W - 2 * pad);
    const y = (v) => H - pad - (v / Math.max(totalGpus, 1)) * (H - 2 * pad);
    // A step function: busy GPUs hold their value until the next sample.
    const line = (value) => series.map((s, i) => (i ? `H${x(s.at).toFixed(1)}V` : `M${x(s.at).toFixed(1)},`) +
      y(value(s)).toFixed(1)).join(" ");
    parts.push([line((s) => Object.values(s.busy).reduce((a, b) => a + b, 0)), "#1d2330", 2.5]);
    types.forEach((t, i) => parts.push([line((s) => s.busy[t] || 0), PALETTE[i % PALETTE.length], 1.5]));
  }
  const nodes = [];
  const axis = document.createElementNS(SVG_NS, "path");
  axis.setAttribute("d", `M${pad},${pad} L${pad},${H - pad} L${W - pad},${H - pad}`);
  axis.setAttribute("stroke", "#99a"); axis.setAttribute("fill", "none");
  nodes.push(axis);
  for (const [label, yy] of [[String(totalGpus), pad], ["0", H - pad]]) {
    const t = document.createElementNS(SVG_NS, "text");
    t.setAttribute("x", 2); t.setAttribute("y", yy + 4); t.setAttribute("font-size", "11"); t.textContent = label;
    nodes.push(t);
  }
  for (const [d, stroke, width] of parts) {
    const path = document.createElementNS(SVG_NS, "path");
    path.setAttribute("d", d); path.setAttribute("stroke", stroke); path.setAttribute("stroke-width", width);
    path.setAttribute("fill", "none");
    nodes.push(path);
  }
  svg.replaceChildren(...nodes);
  const legend = document.getElementById("legend");
  legend.replaceChildren(el("span", {}, "— all GPUs"),
    ...types.map((t, i) => { const s = el("span", {}, `— ${t}`); s.style.color = PALETTE[i % PALETTE.length]; return s; }));
}

function draw(data) {
  drawCards(data);
  drawNodes(data.nodes);
  drawPlot(data.series, data.totals.gpus);
  fillTable("running", data.running.jobs, (j) => [[j.id], [j.name], [j.user], [j.state, `state-${j.state}`],
    [j.gpus], [where(j.placement)], [pct(j.progress)]]);
  fillTable("queue", data.queue.jobs, (j) => [[j.id], [j.name], [j.user], [j.state, `state-${j.state}`], [j.gpus],
    [pct(j.progress)], [j.held]]);
  fillTable("users", data.users, (u) => [[u.name], [u.waiting], [u.running], [u.gpus], [u.done],
    [((u.energy_j || 0) / 3.6e6).toFixed(4)], [`$${(u.cost || 0).toFixed(4)}`]]);
  fillTable("recent", data.recent.jobs, (j) => [[j.id], [j.name], [j.user], [j.state, `state-${j.state}`],
    [(j.energy_j / 1000).toFixed(1)]]);
  const list = document.getElementById("decisions");
  list.replaceChildren(...data.decisions.map((d) => {
    const when = new Date(d.at * 1000).toLocaleTimeString();
    const x = d.detail;
    const text = d.kind === "decision" ? `${when} start ${x.start}, move ${x.move}, stop ${x.stop} (${(1000 * x.seconds).toFixed(2)} ms)`
      : `${when} ${d.kind} ${x.name || x.error || ""}`;
    return el("li", {}, text);
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
