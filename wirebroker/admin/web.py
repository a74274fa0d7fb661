"""The live web view at `/`: server-rendered HTML, refreshed by a little JS polling /api/state.

Read-only. The page is complete without JS (tables rendered here from `state.snapshot`);
the script re-renders the same tables from `/api/state` every 2 seconds and writes "live,
updated HH:MM:SS" in the status line (the headless-Chromium test checks that marker).
Internal topics (`__consumer_offsets`: 50 partitions) get one summary line under the
partitions table instead of a row per partition. No build step, no external asset: one HTML
document with inline CSS and JS.
"""

from __future__ import annotations

import json
from html import escape
from typing import Any

__all__ = ["render_page"]

_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#1d2733;background:#f7f9fb}
h1{font-size:20px;margin:0 0 .2em} h2{font-size:16px;margin:1.4em 0 .4em}
table{border-collapse:collapse;background:#fff;box-shadow:0 1px 2px #0002}
th,td{padding:4px 10px;border-bottom:1px solid #e3e8ee;text-align:left;white-space:nowrap}
th{background:#eef2f6;font-weight:600} td.n{text-align:right;font-variant-numeric:tabular-nums}
.meta{color:#5a6b7d} .bad{color:#b3261e;font-weight:600} .ok{color:#1b7f3b}
#status{font-size:12px;color:#5a6b7d}
"""

_HEAD = {
    "brokers": ["node", "host", "port", "rack", ""],
    "partitions": [
        "topic",
        "partition",
        "leader",
        "epoch",
        "replicas",
        "ISR",
        "log start",
        "log end",
        "high watermark",
        "size",
        "in / out",
        "",
    ],
    "groups": ["group", "state", "generation", "protocol", "members"],
    "lag": ["group", "topic", "partition", "committed", "high watermark", "lag"],
    "authentications": ["listener", "mechanism", "successful", "failed"],
    "quotas": ["quota", "user", "client id", "bound /s", "rate /s", "recorded", "throttled",
               "throttle ms", "last throttle ms"],
    "throttled_connections": ["listener", "reason", "connections"],
}  # fmt: skip

# The same rendering as the Python functions below, for the refresh.
_JS = """
const NUM = new Set(["partition","leader","epoch","log start","log end","high watermark",
  "size","generation","committed","lag","successful","failed","bound /s","rate /s",
  "recorded","throttled","throttle ms","last throttle ms","connections"]);
const esc = s => String(s ?? "-").replace(/[&<>"]/g, c => ({"&":"&amp;","<":"&lt;",
  ">":"&gt;",'"':"&quot;"}[c]));
function size(n){ if(n==null) return "-"; const u=["B","KiB","MiB","GiB"]; let i=0;
  while(n>=1024&&i<3){n/=1024;i++;} return (i?n.toFixed(1):n)+" "+u[i]; }
function table(id, head, rows){
  const h = "<tr>"+head.map(c=>"<th>"+esc(c)+"</th>").join("")+"</tr>";
  const b = rows.map(r=>"<tr>"+r.map((c,i)=>"<td"+(NUM.has(head[i])?' class="n"':"")+">"
    +(c&&c.html!==undefined?c.html:esc(c))+"</td>").join("")+"</tr>").join("");
  document.getElementById(id).innerHTML = h+b;
}
function render(s){
  const b = s.broker;
  document.getElementById("broker").textContent =
    `node ${b.node_id} · cluster ${b.cluster_id} · controller ${b.controller_id} · `+
    `${b.connections} connection(s) · ZooKeeper ${b.zookeeper_session} · ${b.version}`;
  table("brokers", HEAD.brokers, s.brokers.map(x=>[x.node_id,x.host,x.port,x.rack,
    {html: x.node_id===b.controller_id ? '<span class="ok">controller</span>' : ""}]));
  const parts = [];
  document.getElementById("internal").textContent = internal(s.topics);
  for (const t of s.topics) if (!t.internal) for (const p of t.partitions) parts.push([
    t.name, p.partition,
    p.leader, p.leader_epoch, p.replicas.join(","), p.isr.join(","), p.log_start_offset,
    p.log_end_offset, p.high_watermark, size(p.size_bytes),
    p.partition===0 ? size(t.bytes_in)+" / "+size(t.bytes_out) : "",
    {html: p.offline ? '<span class="bad">offline</span>' :
      p.under_replicated ? '<span class="bad">under-replicated</span>' : ""}]);
  table("partitions", HEAD.partitions, parts);
  table("groups", HEAD.groups, s.groups.map(g=>[g.group_id, g.state, g.generation,
    g.protocol, g.members.map(m=>m.client_id+" ("+m.client_host+")").join(", ")]));
  const lag = [];
  for (const g of s.groups) for (const o of g.offsets) lag.push([g.group_id, o.topic,
    o.partition, o.committed_offset, o.high_watermark, o.lag]);
  table("lag", HEAD.lag, lag);
  table("authentications", HEAD.authentications, (s.authentications||[]).map(a=>[
    a.listener, a.mechanism, a.successful,
    {html: a.failed ? '<span class="bad">'+esc(a.failed)+'</span>' : "0"}]));
  table("quotas", HEAD.quotas, (s.quotas||[]).map(q=>[q.kind, q.user||"-",
    q.client_id||"-", q.quota, q.rate, q.recorded, q.throttled, q.throttle_time_ms,
    q.last_throttle_ms]));
  table("throttled_connections", HEAD.throttled_connections,
    (s.throttled_connections||[]).map(t=>[t.listener, t.reason, t.throttled]));
}
function internal(topics){
  const t = topics.filter(t=>t.internal);
  return t.length ? "internal topics (partitions not listed): " +
    t.map(t=>`${t.name} (${t.partitions.length} partitions)`).join(", ") : "";
}
async function refresh(){
  const status = document.getElementById("status");
  try {
    const r = await fetch("/api/state", {cache: "no-store"});
    render(await r.json());
    status.textContent = "live, updated " + new Date().toLocaleTimeString();
  } catch (e) { status.textContent = "not reachable: " + e; }
}
refresh(); setInterval(refresh, 2000);
"""


def _size(n: int | None) -> str:
    if n is None:
        return "-"
    value, unit = float(n), 0
    units = ["B", "KiB", "MiB", "GiB"]
    while value >= 1024 and unit < 3:
        value /= 1024
        unit += 1
    return f"{value:.1f} {units[unit]}" if unit else f"{n} B"


def _cell(value: Any, numeric: bool) -> str:
    text = "-" if value is None else escape(str(value))
    return f'<td class="n">{text}</td>' if numeric else f"<td>{text}</td>"


def _table(id_: str, rows: list[list[Any]]) -> str:
    head = _HEAD[id_]
    numeric = {
        "partition", "leader", "epoch", "log start", "log end", "high watermark", "size",
        "generation", "committed", "lag", "successful", "failed", "bound /s", "rate /s",
        "recorded", "throttled", "throttle ms", "last throttle ms",
    }  # fmt: skip
    out = ["<tr>", *(f"<th>{escape(h)}</th>" for h in head), "</tr>"]
    for row in rows:
        out.append("<tr>")
        for i, value in enumerate(row):
            if isinstance(value, _Html):
                out.append(f"<td>{value.html}</td>")
            else:
                out.append(_cell(value, head[i] in numeric))
        out.append("</tr>")
    return f'<table id="{id_}">{"".join(out)}</table>'


class _Html:
    def __init__(self, html: str) -> None:
        self.html = html


def _flag(p: dict[str, Any]) -> _Html:
    if p["offline"]:
        return _Html('<span class="bad">offline</span>')
    if p["under_replicated"]:
        return _Html('<span class="bad">under-replicated</span>')
    return _Html("")


def render_page(snap: dict[str, Any]) -> str:
    b = snap["broker"]
    brokers = [
        [x["node_id"], x["host"], x["port"], x["rack"],
         _Html('<span class="ok">controller</span>' if x["node_id"] == b["controller_id"] else "")]
        for x in snap["brokers"]
    ]  # fmt: skip
    partitions = [
        [
            t["name"], p["partition"], p["leader"], p["leader_epoch"],
            ",".join(map(str, p["replicas"])), ",".join(map(str, p["isr"])),
            p["log_start_offset"], p["log_end_offset"], p["high_watermark"],
            _size(p["size_bytes"]),
            f"{_size(t['bytes_in'])} / {_size(t['bytes_out'])}" if p["partition"] == 0 else "",
            _flag(p),
        ]
        for t in snap["topics"]
        if not t["internal"]
        for p in t["partitions"]
    ]  # fmt: skip
    internal = [f"{t['name']} ({len(t['partitions'])} partitions)" for t in snap["topics"]
                if t["internal"]]  # fmt: skip
    internal_line = (
        "internal topics (partitions not listed): " + ", ".join(internal) if internal else ""
    )
    groups = [
        [g["group_id"], g["state"], g["generation"], g["protocol"],
         ", ".join(f"{m['client_id']} ({m['client_host']})" for m in g["members"])]
        for g in snap["groups"]
    ]  # fmt: skip
    lag = [
        [g["group_id"], o["topic"], o["partition"], o["committed_offset"], o["high_watermark"],
         o["lag"]]
        for g in snap["groups"]
        for o in g["offsets"]
    ]  # fmt: skip
    authentications = [
        [a["listener"], a["mechanism"], a["successful"],
         _Html(f'<span class="bad">{a["failed"]}</span>' if a["failed"] else "0")]
        for a in snap.get("authentications", [])
    ]  # fmt: skip
    quotas = [
        [q["kind"], q["user"] or "-", q["client_id"] or "-", q["quota"], q["rate"],
         q["recorded"], q["throttled"], q["throttle_time_ms"], q["last_throttle_ms"]]
        for q in snap.get("quotas", [])
    ]  # fmt: skip
    throttled = [
        [t["listener"], t["reason"], t["throttled"]] for t in snap.get("throttled_connections", [])
    ]
    broker_line = (
        f"node {b['node_id']} · cluster {b['cluster_id']} · controller {b['controller_id']} · "
        f"{b['connections']} connection(s) · ZooKeeper {b['zookeeper_session']} · {b['version']}"
    )
    head_js = "const HEAD = " + _json(_HEAD) + ";"
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>wirebroker {escape(str(b["node_id"]))}</title>
<style>{_CSS}</style></head>
<body>
<h1>wirebroker</h1>
<div class="meta" id="broker">{escape(broker_line)}</div>
<div id="status">static snapshot (refreshing needs JavaScript)</div>
<h2>Brokers</h2>{_table("brokers", brokers)}
<h2>Topics and partitions</h2>{_table("partitions", partitions)}
<div class="meta" id="internal">{escape(internal_line)}</div>
<h2>Consumer groups</h2>{_table("groups", groups)}
<h2>Committed offsets and lag</h2>{_table("lag", lag)}
<h2>Authentications (SASL)</h2>{_table("authentications", authentications)}
<h2>Client quotas (throttling)</h2>{_table("quotas", quotas)}
<h2>Throttled connections (KIP-612)</h2>{_table("throttled_connections", throttled)}
<script>{head_js}{_JS}</script>
</body></html>
"""


def _json(value: object) -> str:
    return json.dumps(value).replace("</", "<\\/")
