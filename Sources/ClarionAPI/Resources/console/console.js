// Clarion web console. Plain JavaScript, no build step, nothing loaded from elsewhere.
//
// Rules this file keeps (docs/security.md, "The web console"):
// - the API key lives in sessionStorage only, and goes out only as `Authorization: Bearer` to this node's /v1 routes,
//   never in a URL;
// - everything that came from the API is put into the page with textContent or as an SVG attribute value, never
//   parsed as HTML (there is no innerHTML in this file);
// - device tokens are shown as the short prefix the console routes return, never whole.
"use strict";

(function () {
  const KEY = "clarion.apiKey";
  const FINAL_STATES = new Set(["Completed", "Failed", "Expired", "Cancelled"]);
  const SVG = "http://www.w3.org/2000/svg";
  let generation = 0; // bumped on every navigation: a poll of a page left behind stops.

  // --- DOM helpers -------------------------------------------------------------------------------------------------

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (name === "text") node.textContent = String(value);
      else if (name === "class") node.className = value;
      else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
      else node.setAttribute(name, String(value));
    }
    for (const child of children.flat(Infinity)) {
      if (child === null || child === undefined) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  function svg(tag, attrs, ...children) {
    const node = document.createElementNS(SVG, tag);
    for (const [name, value] of Object.entries(attrs || {})) {
      if (name === "text") node.textContent = String(value);
      else node.setAttribute(name, String(value));
    }
    for (const child of children) if (child) node.append(child);
    return node;
  }

  function table(headers, rows, id) {
    return el("table", { id },
      el("thead", {}, el("tr", {}, headers.map((h) => el("th", { class: h.num ? "num" : null, text: h.label || h })))),
      el("tbody", {}, rows.map((cells) => el("tr", {}, cells.map((c, i) =>
        el("td", { class: headers[i] && headers[i].num ? "num" : null }, c === null || c === undefined ? "—" : c))))));
  }

  function figures(pairs, id) {
    return el("dl", { class: "figures", id }, pairs.map(([k, v, vid]) => [el("dt", { text: k }), el("dd", { id: vid, text: v })]));
  }

  function when(text) {
    if (!text) return "—";
    const date = new Date(text);
    return isNaN(date) ? text : date.toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z");
  }

  function view() { return document.getElementById("view"); }

  function showError(message) { document.getElementById("error").textContent = message || ""; }

  // --- API ---------------------------------------------------------------------------------------------------------

  class APIError extends Error {
    constructor(status, body) {
      const e = body && body.error;
      super(e ? `${e.code}: ${e.message}` : `HTTP ${status}`);
      this.status = status;
      this.code = e ? e.code : null;
    }
  }

  async function api(path) {
    const key = sessionStorage.getItem(KEY);
    if (!key) throw new APIError(401, { error: { code: "unauthorized", message: "Not signed in." } });
    const response = await fetch(path, {
      headers: { "Authorization": "Bearer " + key, "Accept": "application/json" },
      cache: "no-store", credentials: "omit", referrerPolicy: "no-referrer",
    });
    let body = null;
    try { body = await response.json(); } catch (_) { body = null; }
    if (!response.ok) {
      if (response.status === 401) signOut("The API key was refused: " + new APIError(401, body).message);
      throw new APIError(response.status, body);
    }
    return body;
  }

  async function all(path) {
    const items = [];
    let cursor = null;
    for (let page = 0; page < 10; page++) {
      const sep = path.includes("?") ? "&" : "?";
      const body = await api(path + sep + "limit=100" + (cursor ? "&cursor=" + encodeURIComponent(cursor) : ""));
      items.push(...body.items);
      cursor = body.next_cursor;
      if (!cursor) break;
    }
    return items;
  }

  const enc = encodeURIComponent;

  // --- Sign in -----------------------------------------------------------------------------------------------------

  function signOut(message) {
    sessionStorage.removeItem(KEY);
    document.getElementById("nav").hidden = true;
    view().hidden = true;
    view().replaceChildren();
    document.getElementById("signin").hidden = false;
    document.getElementById("signin-error").textContent = message || "";
  }

  async function signIn(event) {
    event.preventDefault();
    const input = document.getElementById("key");
    const key = input.value.trim();
    input.value = "";
    document.getElementById("signin-error").textContent = "";
    if (!key) return;
    sessionStorage.setItem(KEY, key);
    try {
      await api("/v1/applications?limit=1");
    } catch (error) {
      sessionStorage.removeItem(KEY);
      document.getElementById("signin-error").textContent =
        error.status === 401 ? "Sign-in failed: " + error.message : "Sign-in failed: " + error.message;
      return;
    }
    showSignedIn();
    if (!location.hash || location.hash === "#") location.hash = "#/applications";
    else route();
  }

  function showSignedIn() {
    document.getElementById("signin").hidden = true;
    document.getElementById("nav").hidden = false;
    view().hidden = false;
  }

  // --- Pages -------------------------------------------------------------------------------------------------------

  async function applicationsPage() {
    const filter = el("input", { type: "search", id: "app-filter", placeholder: "Filter by name or platform" });
    const holder = el("div", { id: "applications" }, el("p", { class: "muted", text: "Loading…" }));
    view().replaceChildren(el("h2", { text: "Applications" }), el("form", {}, filter), holder);
    const apps = await all("/v1/applications");
    const summaries = await Promise.all(apps.map((a) => api(`/v1/applications/${enc(a.id)}/summary`).catch((e) => ({ error: e }))));
    const rows = apps.map((a, i) => {
      const s = summaries[i];
      const status = a.enabled ? el("span", { class: "ok", text: "enabled" })
        : el("span", { class: "bad", text: `disabled: ${a.disabled_reason || "no reason"} (${when(a.disabled_at)})` });
      if (s.error) return { app: a, cells: [a.name, a.platform, status, null, null, null, s.error.message, null] };
      const h = s.last_hour;
      // Exact counts from every checkpoint (whatever SuccessFeedbackSampleRate is); reasons from the delivery log.
      const sendRate = `${h.send_rate.per_minute.toFixed(2)}/min (${h.sent} sent, ${h.send_rate.last_minute} in the last minute)`;
      const reasons = Object.entries(h.failures_by_reason).map(([r, n]) => `${r} × ${n}`).join("; ");
      const others = [["retried", h.retried], ["expired", h.expired], ["skipped", h.skipped], ["filtered", h.filtered],
        ["held out", h.held_out]].filter(([, n]) => n > 0).map(([label, n]) => `${n} ${label}`);
      return {
        app: a,
        cells: [a.name, a.platform, status, String(s.endpoints.enabled), String(s.endpoints.disabled), String(s.endpoints.stale),
          sendRate, `${h.accepted} succeeded, ${h.failed} failed` + (reasons ? ` — ${reasons}` : "") + (others.length ? `; ${others.join(", ")}` : "")],
      };
    });
    const headers = ["Name", "Platform", "Status", { label: "Enabled endpoints", num: true }, { label: "Disabled", num: true },
      { label: "Stale", num: true }, "Send rate (last hour)", "Outcomes (last hour)"];
    const render = () => {
      const q = filter.value.trim().toLowerCase();
      const shown = rows.filter((r) => !q || r.app.name.toLowerCase().includes(q) || r.app.platform.toLowerCase().includes(q));
      const t = table(headers, shown.map((r) => r.cells), "applications-table");
      shown.forEach((r, i) => t.tBodies[0].rows[i].setAttribute("data-application", r.app.id));
      holder.replaceChildren(shown.length ? t : el("p", { class: "muted", text: "No applications." }));
    };
    filter.addEventListener("input", render);
    const wanted = new URLSearchParams(location.hash.split("?")[1] || "").get("q");
    if (wanted) filter.value = wanted;
    render();
  }

  async function topicsPage() {
    const holder = el("div", { id: "topics" }, el("p", { class: "muted", text: "Loading…" }));
    view().replaceChildren(el("h2", { text: "Topics" }), holder);
    const topics = await all("/v1/topics");
    const cards = await Promise.all(topics.map(async (t) => {
      const s = await api(`/v1/topics/${enc(t.id)}/summary`);
      const messages = s.recent_messages.map((m) => [
        el("a", { href: `#/messages/${m.id}`, text: m.id }), m.state, when(m.published_at),
        String(m.targeted), String(m.accepted), String(m.failed)]);
      return el("div", { class: "card", "data-topic": t.name },
        el("h3", { text: t.name }),
        figures([["Subscriptions", String(s.subscriptions.total)], ["To endpoints", String(s.subscriptions.endpoints)],
          ["Waiting for confirmation", String(s.subscriptions.pending_confirmation)]]),
        el("h3", { text: "Recent messages" }),
        messages.length ? table(["Message", "State", "Published", { label: "Targeted", num: true },
          { label: "Accepted", num: true }, { label: "Failed", num: true }], messages)
          : el("p", { class: "muted", text: "No messages yet." }));
    }));
    holder.replaceChildren(...(cards.length ? cards : [el("p", { class: "muted", text: "No topics." })]));
  }

  function idForm(label, id, current, go) {
    const input = el("input", { type: "text", id, value: current || "", placeholder: label, spellcheck: "false" });
    return el("form", { onsubmit: (e) => { e.preventDefault(); if (input.value.trim()) go(input.value.trim()); } },
      el("label", { for: id, text: label }), input, el("button", { type: "submit", text: "Show" }));
  }

  async function messagesPage(id) {
    const form = idForm("Message id", "message-id", id, (v) => { location.hash = "#/messages/" + enc(v); });
    view().replaceChildren(el("h2", { text: "Messages" }), form);
    if (!id) return;
    const mine = generation;
    const progress = el("progress", { id: "message-progress", max: "1", value: "0" });
    const state = el("span", { id: "message-state", text: "…" });
    const counts = el("div", { id: "message-counts" });
    const failures = el("div", { id: "message-failures" });
    const log = el("div", { id: "message-log" });
    view().append(el("div", { class: "card" }, el("h3", {}, "Message ", el("code", { text: id }), " — ", state), progress, counts),
      el("h3", { text: "Failures by reason" }), failures, el("h3", { text: "Delivery log" }), log);
    for (;;) {
      const m = await api(`/v1/messages/${enc(id)}`);
      if (mine !== generation) return;
      state.textContent = m.state;
      progress.value = Number(m.progress) || 0;
      const d = m.deliveries;
      counts.replaceChildren(figures([
        ["Progress", `${(100 * (Number(m.progress) || 0)).toFixed(1)}%`, "message-percent"], ["Target", m.target_kind],
        ["Planned targets", String(m.planned_targets)], ["Shards", `${m.shards_done} of ${m.shards} done`],
        ["Targeted", String(d.targeted), "count-targeted"], ["Sent", String(d.sent), "count-sent"],
        ["Accepted", String(d.accepted), "count-accepted"], ["Failed", String(d.failed), "count-failed"],
        ["Retried", String(d.retried)], ["Skipped", String(d.skipped)], ["Expired", String(d.expired)],
        ["Filtered", String(d.filtered)], ["Held out", String(d.held_out || 0)], ["Capped", String(d.capped || 0), "count-capped"],
        ["Deferred", String(d.deferred || 0), "count-deferred"], ["Quiet hours skipped", String(d.quiet_skipped || 0)],
        ["Send at", when(m.send_at)],
        ["Pace", !m.pace ? "—" : m.pace.over_seconds !== undefined ? `over ${m.pace.over_seconds} s` : `${m.pace.per_second}/s`],
        ["Pending retries", String(m.pending_retries)],
        ["Published", when(m.published_at)], ["First delivery", when(m.first_delivery_at)], ["Completed", when(m.completed_at)]]));
      const reasons = Object.entries(m.failures_by_reason);
      failures.replaceChildren(reasons.length ? table(["Reason", { label: "Count", num: true }], reasons.map(([r, n]) => [r, String(n)]), "failures-table")
        : el("p", { class: "muted", text: "No failures." }));
      const entries = await api(`/v1/messages/${enc(id)}/deliveries`);
      if (mine !== generation) return;
      log.replaceChildren(entries.items.length ? table(["Logged", "Endpoint", "Token", "Status", "Provider status", "Response", { label: "Attempts", num: true }],
        entries.items.map((r) => [when(r.logged_at), r.endpoint, r.token_prefix ? r.token_prefix + "…" : null, r.status,
          r.provider_status === null ? null : String(r.provider_status), r.provider_response, String(r.attempts)]), "delivery-log")
        : el("p", { class: "muted", text: "Nothing logged (every failure is; successes only at the application's SuccessFeedbackSampleRate)." }));
      if (FINAL_STATES.has(m.state)) return;
      await new Promise((resolve) => setTimeout(resolve, 1000));
      if (mine !== generation) return;
    }
  }

  // One bar per hour from the first hour with opens to the last (hours without opens are empty bars, so the axis is time).
  function opensPerHourChart(buckets) {
    const width = 520, height = 200, pad = 30;
    const chart = svg("svg", { class: "chart", id: "opens-per-hour", width, height, viewBox: `0 0 ${width} ${height}`, role: "img" });
    chart.append(svg("title", { text: "Opens per hour" }));
    if (!buckets.length) { chart.append(svg("text", { x: pad, y: height / 2, text: "No opens yet." })); return chart; }
    const hour = 3600 * 1000;
    const first = Date.parse(buckets[0].hour), last = Date.parse(buckets[buckets.length - 1].hour);
    const hours = Math.round((last - first) / hour) + 1;
    const counts = new Array(hours).fill(0);
    for (const b of buckets) counts[Math.round((Date.parse(b.hour) - first) / hour)] += Number(b.opens);
    const max = Math.max(...counts, 1);
    const slot = (width - 2 * pad) / hours;
    chart.append(svg("line", { class: "axis", x1: pad, y1: height - pad, x2: width - pad, y2: height - pad }));
    counts.forEach((n, i) => {
      const h = (height - 2 * pad) * n / max;
      const bar = svg("rect", { class: "bar", x: (pad + i * slot + slot * 0.1).toFixed(1), y: (height - pad - h).toFixed(1),
        width: (slot * 0.8).toFixed(1), height: h.toFixed(1), "data-opens": n });
      bar.append(svg("title", { text: `${new Date(first + i * hour).toISOString().slice(0, 13)}:00Z: ${n} opens` }));
      chart.append(bar);
    });
    chart.append(svg("text", { x: pad, y: height - 8, text: new Date(first).toISOString().slice(0, 13) + ":00Z" }));
    chart.append(svg("text", { x: pad, y: pad - 10, text: `max ${max}/h` }));
    return chart;
  }

  // Time to open at the 50th, 90th and 99th percentiles: a line through three points.
  function timeToOpenChart(p) {
    const width = 360, height = 200, pad = 44;
    const chart = svg("svg", { class: "chart", id: "time-to-open", width, height, viewBox: `0 0 ${width} ${height}`, role: "img" });
    chart.append(svg("title", { text: "Time to open (seconds) by percentile" }));
    if (!p) { chart.append(svg("text", { x: pad, y: height / 2, text: "No opens yet." })); return chart; }
    const values = [["p50", Number(p.p50)], ["p90", Number(p.p90)], ["p99", Number(p.p99)]];
    const max = Math.max(...values.map((v) => v[1]), 1);
    const points = values.map(([label, v], i) => [pad + i * (width - 2 * pad) / 2, height - pad - (height - 2 * pad) * v / max, label, v]);
    chart.append(svg("line", { class: "axis", x1: pad, y1: height - pad, x2: width - pad, y2: height - pad }));
    chart.append(svg("polyline", { class: "line", points: points.map(([x, y]) => `${x.toFixed(1)},${y.toFixed(1)}`).join(" ") }));
    for (const [x, y, label, v] of points) {
      const dot = svg("circle", { class: "point", cx: x.toFixed(1), cy: y.toFixed(1), r: 4, "data-seconds": v });
      dot.append(svg("title", { text: `${label}: ${v.toFixed(1)} s` }));
      chart.append(dot);
      chart.append(svg("text", { x: x.toFixed(1), y: height - 12, "text-anchor": "middle", text: label }));
      chart.append(svg("text", { x: x.toFixed(1), y: (y - 8).toFixed(1), "text-anchor": "middle", text: `${v.toFixed(0)} s` }));
    }
    return chart;
  }

  async function campaignsPage(id) {
    const form = idForm("Campaign id", "campaign-id", id, (v) => { location.hash = "#/campaigns/" + enc(v); });
    view().replaceChildren(el("h2", { text: "Campaigns" }), form);
    if (!id) {
      const recent = await api("/v1/campaigns?limit=50");
      view().append(el("h3", { text: "Recent campaigns" }), recent.items.length
        ? table(["Campaign", "Name", "Namespace", "Created", { label: "Messages", num: true }], recent.items.map((c) => [
          el("a", { href: `#/campaigns/${enc(c.id)}`, text: c.id }), c.name, c.namespace, when(c.created_at), String(c.messages)]),
        "campaigns-table")
        : el("p", { class: "muted", text: "No campaigns yet (POST /v1/publish with \"campaign\")." }));
      return;
    }
    const r = await api(`/v1/campaigns/${enc(id)}/report`);
    const d = r.deliveries;
    const reasons = Object.entries(r.failures_by_reason);
    view().append(el("div", { class: "card", id: "campaign-report" },
      el("h3", { text: `${r.campaign.name} (${r.campaign.id})` }),
      figures([["Messages", String(r.messages)], ["First published", when(r.first_published_at)],
        ["Targeted", String(d.targeted)], ["Sent", String(d.sent)], ["Accepted", String(d.accepted), "campaign-accepted"],
        ["Failed", String(d.failed)], ["Unique opens", String(r.opens.unique), "campaign-opens"], ["Beacons", String(r.opens.beacons)],
        ["Open rate", r.opens.rate === null ? "—" : `${(100 * r.opens.rate).toFixed(1)}%`, "campaign-open-rate"],
        ["Held out", String(d.held_out || 0), "campaign-held-out"], ["Capped", String(d.capped || 0), "campaign-capped"],
        ["Deferred", String(d.deferred || 0)], ["Quiet hours skipped", String(d.quiet_skipped || 0)]]),
      // A/B variants (text cells only: names come from the publisher).
      (r.variants || []).length ? table(["Variant", { label: "Weight", num: true }, { label: "Sent", num: true },
        { label: "Accepted", num: true }, { label: "Held out", num: true }, { label: "Opens", num: true },
        { label: "Open rate", num: true }], r.variants.map((v) => [v.name, String(v.weight), String(v.sent), String(v.accepted),
        String(v.held_out), String(v.opens), v.open_rate === null ? "—" : `${(100 * v.open_rate).toFixed(1)}%`]),
        "campaign-variants") : null,
      reasons.length ? table(["Failure reason", { label: "Count", num: true }], reasons.map(([k, n]) => [k, String(n)])) : null),
    el("div", { class: "charts" },
      el("div", {}, el("h3", { text: "Opens per hour" }), opensPerHourChart(r.opens_per_hour)),
      el("div", {}, el("h3", { text: "Time to open" }), timeToOpenChart(r.time_to_open_seconds))));
  }

  async function endpointsPage(query) {
    const params = new URLSearchParams(query || "");
    const kind = el("select", { id: "lookup-kind" }, el("option", { value: "user_id", text: "User id" }),
      el("option", { value: "token_prefix", text: "Token prefix" }));
    const input = el("input", { type: "text", id: "lookup-value", spellcheck: "false", placeholder: "alice, or the first characters of a token" });
    if (params.has("token_prefix")) kind.value = "token_prefix";
    input.value = params.get(kind.value) || "";
    const form = el("form", { onsubmit: (e) => {
      e.preventDefault();
      if (input.value.trim()) location.hash = `#/endpoints?${kind.value}=${enc(input.value.trim())}`;
    } }, kind, input, el("button", { type: "submit", text: "Find" }));
    view().replaceChildren(el("h2", { text: "Endpoint lookup" }), form);
    if (!input.value) return;
    // The value goes in this node's API URL; the key never does (it is a header).
    const found = await api(`/v1/endpoints?${kind.value}=${enc(input.value)}`);
    if (!found.items.length) { view().append(el("p", { class: "muted", id: "lookup-empty", text: "No endpoint matches." })); return; }
    const cards = await Promise.all(found.items.map(async (e) => {
      const log = await api(`/v1/endpoints/${enc(e.id)}/deliveries`);
      return el("div", { class: "card", "data-endpoint": e.id },
        el("h3", {}, el("code", { text: e.id })),
        figures([["Application", e.application], ["Token", e.token_prefix + "…"], ["User", e.user_id || "—"],
          ["Status", e.enabled ? "enabled" : `disabled: ${e.disabled_reason || "no reason"} (${when(e.disabled_at)})`],
          ["Created", when(e.created_at)], ["Token refreshed", when(e.token_refreshed_at)]]),
        el("h3", { text: "Recent deliveries (24 h)" }),
        log.items.length ? table(["Logged", "Message", "Status", "Provider status", "Response"], log.items.map((r) => [
          when(r.logged_at), r.message ? el("a", { href: `#/messages/${r.message}`, text: r.message }) : null, r.status,
          r.provider_status === null ? null : String(r.provider_status), r.provider_response]))
          : el("p", { class: "muted", text: "Nothing logged in the last 24 hours." }));
    }));
    view().append(el("div", { id: "lookup-results" }, cards));
  }

  // --- Routing -----------------------------------------------------------------------------------------------------

  async function route() {
    generation += 1;
    showError("");
    if (!sessionStorage.getItem(KEY)) { signOut(); return; }
    showSignedIn();
    const [path, query] = location.hash.replace(/^#\/?/, "").split("?");
    const decode = (text) => { try { return decodeURIComponent(text); } catch (_) { return text; } };
    const page = path.split("/")[0] || "applications", arg = decode(path.split("/").slice(1).join("/"));
    for (const a of document.querySelectorAll("nav a")) a.classList.toggle("active", a.id === "nav-" + page);
    try {
      switch (page) {
        case "topics": await topicsPage(); break;
        case "messages": await messagesPage(arg); break;
        case "campaigns": await campaignsPage(arg); break;
        case "endpoints": await endpointsPage(query); break;
        default: await applicationsPage();
      }
    } catch (error) {
      if (sessionStorage.getItem(KEY)) showError(error.message);
    }
  }

  document.addEventListener("DOMContentLoaded", () => {
    document.getElementById("signin-form").addEventListener("submit", signIn);
    document.getElementById("signout").addEventListener("click", () => signOut());
    window.addEventListener("hashchange", route);
    route();
  });
})();
