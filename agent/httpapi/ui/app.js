// cairn web UI. Plain JavaScript over the agent's /v1 HTTP API, fetch only.
//
// Routes live in the URL fragment: #/<dc>/services, #/<dc>/services/<name>,
// #/<dc>/nodes, #/<dc>/nodes/<node>, #/<dc>/kv/<key or prefix/>.
// Each view keeps itself current with blocking queries (?index=&wait=),
// one loop per thing it shows; all of a view's loops share one
// AbortController that is aborted when the visitor goes elsewhere.
// The DOM is built with createElement and textContent only: nothing the
// cluster sends is ever parsed as HTML.
"use strict";

(() => {
  const TOKEN_KEY = "cairn.ui.token";
  const WAIT = "30s";
  const DETAIL_CONCURRENCY = 4; // leaves room under the browser's 6 connections per host

  const app = {
    agentDC: "",   // the datacenter of the agent serving the UI
    domain: "cluster", // the DNS domain; from /v1/agent/self when it says
    dcs: [],
    view: null,    // AbortController of the current view
  };

  // ---- small helpers -------------------------------------------------

  const $ = (id) => document.getElementById(id);

  // el builds an element: el("a", {href: "#", class: "x"}, "text", child…).
  // Attributes are set with setAttribute; children that are strings become
  // text nodes.
  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? "" : String(v));
    }
    for (const k of kids.flat(Infinity)) {
      if (k === undefined || k === null || k === false) continue;
      e.append(k instanceof Node ? k : document.createTextNode(String(k)));
    }
    return e;
  }

  const enc = encodeURIComponent;
  const link = (...parts) => "#/" + parts.map(enc).join("/");

  function sleep(ms, signal) {
    return new Promise((resolve) => {
      const t = setTimeout(resolve, ms);
      signal.addEventListener("abort", () => { clearTimeout(t); resolve(); }, { once: true });
    });
  }

  const STATUS_RANK = { passing: 0, warning: 1, critical: 2, maintenance: 2 };
  function worst(checks) {
    let w = "passing";
    for (const c of checks) {
      if ((STATUS_RANK[c.Status] ?? 2) > STATUS_RANK[w]) w = c.Status in STATUS_RANK ? c.Status : "critical";
    }
    return w;
  }

  const plural = (n, word) => n + " " + word + (n === 1 ? "" : "s");

  function badge(status, text) {
    return el("span", { class: "badge " + status }, text ?? status);
  }

  function tags(list) {
    return (list || []).map((t) => el("span", { class: "tag" }, t));
  }

  // healthBadges summarizes instance statuses: "2 passing", "1 critical".
  function healthBadges(counts) {
    const out = [];
    for (const s of ["passing", "warning", "critical"]) {
      if (counts[s]) out.push(badge(s, counts[s] + " " + s));
    }
    return out.length ? out : [badge("none", "no instances")];
  }

  // ---- token and errors ------------------------------------------------

  function token() { return localStorage.getItem(TOKEN_KEY) || ""; }

  class APIError extends Error {
    constructor(status, message) { super(message); this.status = status; }
  }

  function showBanner(parts) {
    const b = $("banner");
    b.replaceChildren(...parts);
    b.hidden = false;
  }
  function clearBanner() { $("banner").hidden = true; }

  // reportError shows what went wrong; a 403 points at the token box.
  function reportError(err) {
    if (err instanceof APIError && err.status === 403) {
      showBanner([
        el("strong", {}, /^permission denied/i.test(err.message) ? err.message : "Permission denied: " + err.message),
        " ",
        token()
          ? "The ACL token in the “ACL token” box at the top does not allow this read; enter one that does."
          : "This agent enforces ACLs: enter a token in the “ACL token” box at the top.",
      ]);
      const box = $("token-box");
      if (!box.open) { box.open = true; $("token").focus(); }
      return;
    }
    showBanner([el("strong", {}, "Cannot reach the agent: "), err.message || String(err)]);
  }

  // ---- API -------------------------------------------------------------

  // api GETs path with params (plus ?dc= for the datacenter being viewed)
  // and returns {data, index}. notFoundOK makes a 404 {data: null}.
  async function api(path, { signal, params = {}, dc = true, notFoundOK = false } = {}) {
    const url = new URL(path, location.origin);
    const all = { ...params };
    if (dc && currentDC() && currentDC() !== app.agentDC) all.dc = currentDC();
    for (const [k, v] of Object.entries(all)) url.searchParams.set(k, v === true ? "" : v);
    const headers = {};
    if (token()) headers["X-Consul-Token"] = token();
    const resp = await fetch(url, { signal, headers, cache: "no-store" });
    const index = Number(resp.headers.get("X-Consul-Index")) || 0;
    // Reads leave out what the token may not see, and say so.
    if (resp.headers.get("X-Consul-Results-Filtered-By-ACLs") === "true" && signal && !signal.aborted) $("notice").hidden = false;
    if (resp.status === 404 && notFoundOK) return { data: null, index };
    if (!resp.ok) {
      let msg = resp.status + " " + resp.statusText;
      try {
        const body = await resp.json();
        if (body && body.error) msg = body.error;
      } catch { /* not JSON */ }
      throw new APIError(resp.status, msg);
    }
    return { data: await resp.json(), index };
  }

  // watch runs a blocking query until signal aborts, calling onData with
  // each new answer. The first read does not block; each next one passes
  // the last X-Consul-Index and returns when the data changed or after
  // WAIT. An index that goes backwards (a restored snapshot, a new
  // leader's store) starts over. Errors back off up to 30 s.
  async function watch(signal, path, opts, onData) {
    let index = 0;
    let backoff = 0;
    let last = null; // the last answer, as JSON: an index that moved for other data changes nothing here
    while (!signal.aborted) {
      try {
        const params = { ...(opts.params || {}) };
        if (index > 0) { params.index = index; params.wait = WAIT; }
        const started = Date.now();
        const r = await api(path, { ...opts, params, signal });
        if (signal.aborted) return;
        backoff = 0;
        setLive(true);
        clearBanner();
        const unchanged = index > 0 && r.index === index;
        index = r.index > 0 && r.index >= index ? r.index : 0;
        const json = JSON.stringify(r.data);
        if (!unchanged && json !== last) {
          last = json;
          onData(r.data);
        }
        if (index === 0) await sleep(5000, signal); // no index: poll gently
        else if (Date.now() - started < 50) await sleep(250, signal); // never spin on a store that churns
      } catch (err) {
        if (signal.aborted) return;
        setLive(false);
        reportError(err);
        index = 0;
        backoff = Math.min(backoff ? backoff * 2 : 1000, 30000);
        await sleep(backoff, signal);
      }
    }
  }

  function setLive(ok) {
    const l = $("live");
    l.className = "live " + (ok ? "ok" : "err");
    l.title = ok ? "Live: updates arrive as the catalog changes" : "Not updating: see the message above";
  }

  // stamp is the "updated at" line at the bottom of a view.
  function stamp(node) {
    node.textContent = "Updated " + new Date().toLocaleTimeString();
  }

  // ---- routing -----------------------------------------------------------

  function parseRoute() {
    const raw = location.hash.replace(/^#\/?/, "");
    const parts = raw === "" ? [] : raw.split("/").map((p) => {
      try { return decodeURIComponent(p); } catch { return p; }
    });
    return { dc: parts[0] || "", section: parts[1] || "", rest: parts.slice(2) };
  }

  function currentDC() { return parseRoute().dc || app.agentDC; }

  function route() {
    if (app.view) app.view.abort();
    app.view = new AbortController();
    const signal = app.view.signal;
    clearBanner();
    $("notice").hidden = true;
    const r = parseRoute();
    if (!r.dc || !r.section) {
      location.replace(link(r.dc || app.agentDC || "dc1", "services"));
      return;
    }
    updateChrome(r);
    const main = $("main");
    main.replaceChildren();
    window.scrollTo(0, 0);
    switch (r.section) {
      case "services":
        if (r.rest.length) serviceView(main, signal, r.rest.join("/"));
        else servicesView(main, signal);
        break;
      case "nodes":
        if (r.rest.length) nodeView(main, signal, r.rest.join("/"));
        else nodesView(main, signal);
        break;
      case "kv":
        kvView(main, signal, r.rest.join("/"));
        break;
      default:
        main.append(el("p", { class: "empty" }, "No such page. ", el("a", { href: link(r.dc, "services") }, "Services")));
    }
  }

  function updateChrome(r) {
    for (const s of ["services", "nodes", "kv"]) {
      const a = $("nav-" + s);
      a.href = link(r.dc, s);
      a.classList.toggle("active", r.section === s);
    }
    $("brand").href = link(r.dc, "services");
    const sel = $("dc");
    const dcs = app.dcs.includes(r.dc) ? app.dcs : [...app.dcs, r.dc].sort();
    if (sel.options.length !== dcs.length || [...sel.options].some((o, i) => o.value !== dcs[i])) {
      sel.replaceChildren(...dcs.map((d) => el("option", { value: d }, d)));
    }
    sel.value = r.dc;
    document.title = r.section + " · " + r.dc + " · cairn";
  }

  // ---- services ------------------------------------------------------------

  // servicesView lists every service with its tags, instance count and
  // health. Names and tags come from /v1/catalog/services; each service's
  // instances and checks from /v1/health/service/<name>, fetched again
  // whenever the list or any check changes (/v1/health/state/any).
  function servicesView(main, signal) {
    const filter = el("input", {
      type: "search", id: "filter", placeholder: "Filter by name or tag", "aria-label": "Filter services",
      value: sessionStorage.getItem("cairn.ui.filter") || "",
    });
    const count = el("span", { class: "count" });
    const body = el("div", { id: "services" });
    const updated = el("p", { class: "updated" });
    main.append(el("h1", {}, "Services"), el("div", { class: "toolbar" }, filter, count), body, updated);

    let services = null; // name → tags
    const details = new Map(); // name → {instances, counts}
    const render = () => {
      if (!services) return;
      const q = filter.value.trim().toLowerCase();
      sessionStorage.setItem("cairn.ui.filter", filter.value);
      const names = Object.keys(services).sort();
      const shown = names.filter((n) => !q || n.toLowerCase().includes(q) ||
        services[n].some((t) => t.toLowerCase().includes(q)));
      count.textContent = (shown.length === names.length ? "" : shown.length + " of ") +
        plural(names.length, "service");
      if (!shown.length) {
        body.replaceChildren(el("p", { class: "empty" }, names.length ? "No service matches the filter." : "No services to show."));
        return;
      }
      const rows = shown.map((n) => {
        const d = details.get(n);
        return el("tr", {},
          el("td", { class: "name", "data-label": "Service" }, el("a", { href: link(currentDC(), "services", n), "data-service": n }, n)),
          el("td", { "data-label": "Health" }, d ? healthBadges(d.counts) : el("span", { class: "muted" }, "…")),
          el("td", { "data-label": "Instances" }, d ? String(d.instances) : "…"),
          el("td", { "data-label": "Tags" }, tags(services[n])));
      });
      body.replaceChildren(el("table", { class: "list" },
        el("thead", {}, el("tr", {}, el("th", {}, "Service"), el("th", {}, "Health"), el("th", {}, "Instances"), el("th", {}, "Tags"))),
        el("tbody", {}, rows)));
      stamp(updated);
    };
    filter.addEventListener("input", render);

    // refreshDetails re-reads every service's instances, a few at a time;
    // a request for another refresh while one runs makes it run again.
    let running = false, again = false;
    const refreshDetails = async () => {
      if (running) { again = true; return; }
      running = true;
      try {
        do {
          again = false;
          const queue = Object.keys(services || {});
          for (const n of details.keys()) if (!(n in (services || {}))) details.delete(n);
          const worker = async () => {
            while (queue.length && !signal.aborted) {
              const name = queue.shift();
              try {
                const { data } = await api("/v1/health/service/" + enc(name), { signal });
                const counts = { passing: 0, warning: 0, critical: 0 };
                for (const inst of data || []) {
                  const s = worst(inst.Checks || []);
                  counts[s === "maintenance" ? "critical" : s]++;
                }
                details.set(name, { instances: (data || []).length, counts });
              } catch (err) {
                if (signal.aborted) return;
                reportError(err);
              }
            }
          };
          await Promise.all(Array.from({ length: DETAIL_CONCURRENCY }, worker));
          if (!signal.aborted) render();
        } while (again && !signal.aborted);
      } finally {
        running = false;
      }
    };

    watch(signal, "/v1/catalog/services", {}, (data) => {
      services = data || {};
      render();
      refreshDetails();
    });
    let seenChecks = false;
    watch(signal, "/v1/health/state/any", {}, () => {
      // The first answer comes with the first services list, which
      // starts a refresh of its own.
      if (seenChecks) refreshDetails();
      seenChecks = true;
    });
  }

  // dnsNames lists the names under which the agent answers for a service.
  function dnsNames(name, serviceTags, dc) {
    const label = /^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/i;
    const d = app.domain;
    const out = [];
    if (!label.test(name)) return out;
    if (dc === app.agentDC) out.push([name + ".service." + d, "A/AAAA and SRV, this agent's datacenter"]);
    out.push([name + ".service." + dc + "." + d, "A/AAAA and SRV"]);
    out.push(["_" + name + "._tcp.service." + dc + "." + d, "SRV, RFC 2782"]);
    for (const t of [...new Set(serviceTags)].sort()) {
      if (!label.test(t)) continue;
      out.push([t + "." + name + ".service." + dc + "." + d, "instances tagged " + t]);
      out.push(["_" + name + "._" + t + ".service." + dc + "." + d, "SRV, instances tagged " + t]);
    }
    return out;
  }

  // askDNS shows what the agent's DNS answers for qname (SRV) now, asked
  // through /v1/internal/ui/dns (a page cannot send DNS); on failure the
  // estimate from the instances' health stays.
  async function askDNS(signal, target, qname) {
    try {
      const r = await api("/v1/internal/ui/dns", { signal, params: { name: qname, type: "SRV" }, dc: false });
      if (signal.aborted) return;
      const d = r.data;
      target.replaceChildren(
        el("div", {}, "The agent answers ", el("code", {}, qname + " SRV"), " now with " + d.Rcode + ":"),
        el("pre", { class: "dig" }, [...d.Answer, ...d.Extra].join("\n") || "(no records)"));
    } catch { /* keep the estimate */ }
  }

  function checkBlock(c) {
    return el("div", { class: "check" },
      el("div", { class: "check-head" }, badge(c.Status), el("strong", {}, c.Name || c.CheckID),
        el("span", { class: "muted mono" }, c.CheckID), c.ServiceID ? null : el("span", { class: "muted" }, "(node check)")),
      c.Notes ? el("div", { class: "muted" }, c.Notes) : null,
      c.Output ? el("pre", {}, c.Output) : null);
  }

  // serviceView shows one service's instances with their checks, and its
  // DNS names, following /v1/health/service/<name>.
  function serviceView(main, signal, name) {
    const summary = el("span");
    const dns = el("ul", { class: "dns" });
    const answer = el("p", { class: "muted" });
    const list = el("div", { id: "instances" });
    const updated = el("p", { class: "updated" });
    main.append(
      el("div", { class: "crumbs" }, el("a", { href: link(currentDC(), "services") }, "Services"), " / "),
      el("h1", {}, name, summary),
      el("h2", {}, "DNS names"), el("div", { class: "card" }, dns, answer),
      el("h2", {}, "Instances"), list, updated);

    watch(signal, "/v1/health/service/" + enc(name), {}, (data) => {
      const insts = data || [];
      const counts = { passing: 0, warning: 0, critical: 0 };
      const allTags = [];
      const answered = [];
      const cards = insts.map((inst) => {
        const svc = inst.Service || {};
        const node = inst.Node || {};
        const status = worst(inst.Checks || []);
        counts[status === "maintenance" ? "critical" : status]++;
        allTags.push(...(svc.Tags || []));
        const addr = (svc.Address || node.Address || "") + (svc.Port ? ":" + svc.Port : "");
        if (status !== "critical" && status !== "maintenance") answered.push(addr);
        return el("div", { class: "card instance" },
          el("h3", {}, badge(status), el("a", { href: link(currentDC(), "nodes", node.Node) }, node.Node),
            el("code", {}, addr)),
          el("dl", { class: "kvgrid" },
            el("dt", {}, "Service ID"), el("dd", { class: "mono" }, svc.ID),
            el("dt", {}, "Tags"), el("dd", {}, (svc.Tags || []).length ? tags(svc.Tags) : el("span", { class: "muted" }, "none")),
            svc.Meta && Object.keys(svc.Meta).length ? [el("dt", {}, "Meta"),
              el("dd", {}, Object.entries(svc.Meta).map(([k, v]) => el("span", { class: "tag" }, k + "=" + v)))] : null),
          (inst.Checks || []).length ? (inst.Checks || []).map(checkBlock) : el("p", { class: "muted" }, "No checks."));
      });
      summary.replaceChildren(...healthBadges(counts));
      list.replaceChildren(...(cards.length ? cards : [el("p", { class: "empty" }, "This service has no instances.")]));
      const names = dnsNames(name, allTags, currentDC());
      dns.replaceChildren(...(names.length
        ? names.map(([n, what]) => el("li", {}, el("code", {}, n), el("span", { class: "what" }, what)))
        : [el("li", { class: "muted" }, "The name is not a DNS label, so DNS does not answer for it.")]));
      answer.textContent = answered.length
        ? "DNS answers now with " + answered.length + " of " + insts.length + " instances (critical ones are left out): " + answered.join(", ")
        : "DNS has no healthy instance to answer with now (NXDOMAIN).";
      if (names.length) askDNS(signal, answer, name + ".service." + currentDC() + "." + app.domain);
      stamp(updated);
    });
  }

  // ---- nodes ---------------------------------------------------------------

  function nodesView(main, signal) {
    const filter = el("input", { type: "search", placeholder: "Filter by name or address", "aria-label": "Filter nodes" });
    const count = el("span", { class: "count" });
    const body = el("div", { id: "nodes" });
    const updated = el("p", { class: "updated" });
    main.append(el("h1", {}, "Nodes"), el("div", { class: "toolbar" }, filter, count), body, updated);
    let nodes = null;
    let checks = [];
    const render = () => {
      if (!nodes) return;
      const q = filter.value.trim().toLowerCase();
      const shown = nodes.filter((n) => !q || n.Node.toLowerCase().includes(q) || (n.Address || "").includes(q));
      count.textContent = (shown.length === nodes.length ? "" : shown.length + " of ") + plural(nodes.length, "node");
      if (!shown.length) {
        body.replaceChildren(el("p", { class: "empty" }, nodes.length ? "No node matches the filter." : "No nodes."));
        return;
      }
      const byNode = new Map();
      for (const c of checks) {
        if (!byNode.has(c.Node)) byNode.set(c.Node, []);
        byNode.get(c.Node).push(c);
      }
      body.replaceChildren(el("table", { class: "list" },
        el("thead", {}, el("tr", {}, el("th", {}, "Node"), el("th", {}, "Address"), el("th", {}, "Node health"), el("th", {}, "Checks"))),
        el("tbody", {}, shown.map((n) => {
          const cs = byNode.get(n.Node) || [];
          const own = cs.filter((c) => !c.ServiceID);
          const counts = { passing: 0, warning: 0, critical: 0 };
          for (const c of cs) counts[c.Status in counts ? c.Status : "critical"]++;
          return el("tr", {},
            el("td", { class: "name", "data-label": "Node" }, el("a", { href: link(currentDC(), "nodes", n.Node), "data-node": n.Node }, n.Node)),
            el("td", { class: "mono", "data-label": "Address" }, n.Address),
            el("td", { "data-label": "Node health" }, own.length ? badge(worst(own)) : badge("none", "no node checks")),
            el("td", { "data-label": "Checks" }, cs.length ? Object.entries(counts).filter(([, v]) => v).map(([s, v]) => badge(s, v + " " + s)) : el("span", { class: "muted" }, "none")));
        }))));
      stamp(updated);
    };
    filter.addEventListener("input", render);
    watch(signal, "/v1/catalog/nodes", {}, (data) => { nodes = data || []; render(); });
    watch(signal, "/v1/health/state/any", {}, (data) => { checks = data || []; render(); });
  }

  function nodeView(main, signal, name) {
    const info = el("dl", { class: "kvgrid" });
    const services = el("div", { id: "node-services" });
    const checks = el("div", { id: "node-checks" });
    const summary = el("span");
    const updated = el("p", { class: "updated" });
    main.append(
      el("div", { class: "crumbs" }, el("a", { href: link(currentDC(), "nodes") }, "Nodes"), " / "),
      el("h1", {}, name, summary), el("div", { class: "card" }, info),
      el("h2", {}, "Services"), services, el("h2", {}, "Checks"), checks, updated);

    watch(signal, "/v1/catalog/node/" + enc(name), { notFoundOK: true }, (data) => {
      if (!data || !data.Node) {
        info.replaceChildren(el("dd", { class: "error" }, "No node named " + name + " in " + currentDC() + "."));
        services.replaceChildren();
        return;
      }
      const n = data.Node;
      info.replaceChildren(...[
        el("dt", {}, "Address"), el("dd", { class: "mono" }, n.Address),
        el("dt", {}, "Datacenter"), el("dd", {}, n.Datacenter || currentDC()),
        n.ID ? [el("dt", {}, "ID"), el("dd", { class: "mono" }, n.ID)] : null,
        n.Meta && Object.keys(n.Meta).length ? [el("dt", {}, "Meta"),
          el("dd", {}, Object.entries(n.Meta).map(([k, v]) => el("span", { class: "tag" }, k + "=" + v)))] : null,
      ].flat().filter(Boolean));
      const svcs = Object.values(data.Services || {}).sort((a, b) => (a.Service + a.ID).localeCompare(b.Service + b.ID));
      services.replaceChildren(svcs.length ? el("table", { class: "list" },
        el("thead", {}, el("tr", {}, el("th", {}, "Service"), el("th", {}, "ID"), el("th", {}, "Address"), el("th", {}, "Tags"))),
        el("tbody", {}, svcs.map((s) => el("tr", {},
          el("td", { class: "name", "data-label": "Service" }, el("a", { href: link(currentDC(), "services", s.Service) }, s.Service)),
          el("td", { class: "mono", "data-label": "ID" }, s.ID),
          el("td", { class: "mono", "data-label": "Address" }, (s.Address || n.Address) + (s.Port ? ":" + s.Port : "")),
          el("td", { "data-label": "Tags" }, tags(s.Tags)))))) : el("p", { class: "empty" }, "No services on this node."));
      stamp(updated);
    });
    watch(signal, "/v1/health/node/" + enc(name), {}, (data) => {
      const cs = data || [];
      summary.replaceChildren(cs.length ? badge(worst(cs)) : badge("none", "no checks"));
      checks.replaceChildren(cs.length ? el("div", { class: "card" }, cs.map((c) =>
        el("div", {}, checkBlock(c), c.ServiceName ? el("div", { class: "muted" }, "of service ",
          el("a", { href: link(currentDC(), "services", c.ServiceName) }, c.ServiceName))
          : null))) : el("p", { class: "empty" }, "No checks on this node."));
      stamp(updated);
    });
  }

  // ---- key/value -----------------------------------------------------------

  // kvView browses the store one level at a time (?keys&separator=/), or
  // shows one entry when the path does not end in "/". Read-only.
  function kvView(main, signal, key) {
    const crumbs = el("div", { class: "crumbs" }, el("a", { href: link(currentDC(), "kv") }, "Key/Value"), " / ");
    let acc = "";
    const segs = key.split("/");
    segs.forEach((s, i) => {
      if (s === "" && i === segs.length - 1) return;
      acc += s + (i < segs.length - 1 ? "/" : "");
      crumbs.append(i < segs.length - 1 ? el("a", { href: kvLink(acc) }, s + "/") : el("span", {}, s));
    });
    const body = el("div", { id: "kv" });
    const updated = el("p", { class: "updated" });
    main.append(crumbs, el("h1", {}, key === "" ? "Key/Value" : key), body, updated);

    if (key === "" || key.endsWith("/")) {
      watch(signal, "/v1/kv/" + kvPath(key), { params: { keys: true, separator: "/" }, notFoundOK: true }, (data) => {
        const keys = (data || []).filter((k) => k !== key).sort();
        body.replaceChildren(keys.length ? el("table", { class: "list" }, el("tbody", {}, keys.map((k) =>
          el("tr", {}, el("td", { class: "name" }, el("a", { href: kvLink(k) }, k.slice(key.length))),
            el("td", { class: "muted" }, k.endsWith("/") ? "folder" : "key")))))
          : el("p", { class: "empty" }, key === "" ? "The key/value store is empty." : "Nothing under " + key + "."));
        stamp(updated);
      });
      return;
    }
    watch(signal, "/v1/kv/" + kvPath(key), { notFoundOK: true }, (data) => {
      if (!data || !data.length) {
        body.replaceChildren(el("p", { class: "empty" }, "No key " + key + "."));
        return;
      }
      const e = data[0];
      const { text, binary, size } = decodeValue(e.Value);
      body.replaceChildren(el("div", { class: "card" },
        el("dl", { class: "kvgrid" },
          el("dt", {}, "Size"), el("dd", {}, size + " bytes" + (binary ? " (binary, shown as hex)" : "")),
          el("dt", {}, "Flags"), el("dd", {}, String(e.Flags ?? 0)),
          el("dt", {}, "Modify index"), el("dd", {}, String(e.ModifyIndex ?? "")),
          e.Session ? [el("dt", {}, "Locked by session"), el("dd", { class: "mono" }, e.Session)] : null),
        size ? el("pre", { id: "kv-value" }, text) : el("p", { class: "muted" }, "Empty value.")));
      stamp(updated);
    });
  }

  // kvPath escapes each segment of a key for a URL path, keeping the "/".
  const kvPath = (key) => key.split("/").map(enc).join("/");
  const kvLink = (key) => "#/" + enc(currentDC()) + "/kv/" + kvPath(key);

  function decodeValue(b64) {
    if (!b64) return { text: "", binary: false, size: 0 };
    const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
    try {
      return { text: new TextDecoder("utf-8", { fatal: true }).decode(bytes), binary: false, size: bytes.length };
    } catch {
      const hex = Array.from(bytes.slice(0, 4096), (b) => b.toString(16).padStart(2, "0")).join(" ");
      return { text: hex + (bytes.length > 4096 ? " …" : ""), binary: true, size: bytes.length };
    }
  }

  // ---- start -----------------------------------------------------------------

  async function loadAgent() {
    try {
      const { data } = await api("/v1/agent/self", { dc: false });
      const cfg = (data && data.Config) || {};
      app.agentDC = cfg.Datacenter || app.agentDC;
      const dom = cfg.Domain || cfg.DNSDomain || (data.DebugConfig && data.DebugConfig.DNSDomain);
      if (dom) app.domain = String(dom).replace(/\.$/, "");
    } catch (err) {
      // Without agent:read the UI still works; the datacenter comes
      // from the list below or the URL.
      if (!(err instanceof APIError && err.status === 403)) reportError(err);
    }
    try {
      const { data } = await api("/v1/catalog/datacenters", { dc: false });
      app.dcs = (data || []).slice().sort();
    } catch (err) {
      reportError(err);
    }
    if (!app.agentDC) app.agentDC = app.dcs[0] || "dc1";
    if (!app.dcs.includes(app.agentDC)) app.dcs.push(app.agentDC);
  }

  function setupChrome() {
    const box = $("token-box");
    const input = $("token");
    const mark = () => box.classList.toggle("set", token() !== "");
    input.value = token();
    mark();
    $("token-form").addEventListener("submit", async (ev) => {
      ev.preventDefault();
      const v = input.value.trim();
      if (v) localStorage.setItem(TOKEN_KEY, v); else localStorage.removeItem(TOKEN_KEY);
      mark();
      box.open = false;
      await loadAgent();
      route();
    });
    $("token-clear").addEventListener("click", () => {
      localStorage.removeItem(TOKEN_KEY);
      input.value = "";
      mark();
      box.open = false;
      route();
    });
    $("dc").addEventListener("change", (ev) => {
      const r = parseRoute();
      location.hash = link(ev.target.value, r.section || "services");
    });
    window.addEventListener("hashchange", route);
  }

  document.addEventListener("DOMContentLoaded", async () => {
    setupChrome();
    await loadAgent();
    route();
  });
})();
