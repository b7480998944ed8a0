// The live page: a snapshot, then server-sent events applied to it.
// No framework: the page is small and must work offline (embedded).
"use strict";
(function () {
  var csrf = document.querySelector('meta[name="csrf"]').content;
  var STAGES = ["discovery", "parameters", "authorization", "execution", "verification"];
  var TAIL = 16384;
  var seq = 0, es = null, cards = {};
  var $ = function (id) { return document.getElementById(id); };

  function el(tag, attrs, kids) {
    var e = document.createElement(tag);
    for (var k in attrs || {}) {
      if (k === "text") e.textContent = attrs[k];
      else if (k === "class") e.className = attrs[k];
      else if (k.slice(0, 2) === "on") e.addEventListener(k.slice(2), attrs[k]);
      else e.setAttribute(k, attrs[k]);
    }
    (kids || []).forEach(function (c) { if (c) e.appendChild(typeof c === "string" ? document.createTextNode(c) : c); });
    return e;
  }
  function status(text, cls) { var c = $("conn"); c.textContent = text; c.className = "conn " + (cls || ""); }

  function post(url, body) {
    return fetch(url, { method: "POST", credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf }, body: JSON.stringify(body || {}) })
      .then(function (r) { return r.json().then(function (j) { if (!r.ok) throw new Error(j.error || r.status); return j; }); });
  }

  // --- calls
  function stageChips(c) {
    var box = el("span", { class: "stages", "aria-label": "stage" });
    var at = STAGES.indexOf(c.stage);
    STAGES.forEach(function (s, i) {
      var cls = i < at ? "done" : i === at ? (c.status === "error" ? "fail" : c.status === "running" ? "now" : "done") : "";
      box.appendChild(el("span", { class: cls, text: s }));
    });
    return box;
  }
  function elapsed(c) {
    if (c.status !== "running") return c.durationMs + " ms";
    return Math.max(0, Math.round((Date.now() - Date.parse(c.startedAt)) / 1000)) + " s so far";
  }
  function drawCall(c) {
    var card = cards[c.id];
    if (!card) {
      card = { c: c, node: el("article", { class: "card call", id: "call-" + c.id, "aria-label": c.tool + " call" }) };
      card.pre = el("pre", { class: "out", tabindex: "0", "aria-label": "live output", "aria-live": "off" });
      cards[c.id] = card;
      var list = $("calls");
      if (!list.querySelector("article")) list.textContent = "";
      list.insertBefore(card.node, list.firstChild);
    }
    card.c = c;
    var head = el("header", {}, [
      el("strong", {}, [el("code", { text: c.tool })]),
      c.target ? el("code", { class: "target", text: c.target }) : null,
      el("span", { class: "pill " + c.status, text: c.status }),
      stageChips(c),
      el("span", { class: "muted took", text: elapsed(c) }),
      c.lastBeat ? el("span", { class: "muted beat", text: "heartbeat " + new Date(c.lastBeat).toLocaleTimeString() }) : null,
      el("span", { class: "muted", text: "task " + c.taskId }),
      el("a", { href: "/ui/calls/" + encodeURIComponent(c.id), text: "record" }),
      c.status === "running" ? el("button", { class: "stop", type: "button", "aria-label": "Stop " + c.tool + " " + (c.target || ""),
        onclick: function (ev) { ev.target.disabled = true; post("/ui/api/calls/" + encodeURIComponent(c.id) + "/stop").catch(function (e) { alert(e.message); }); }, text: "Stop" }) : null
    ]);
    card.node.textContent = "";
    card.node.appendChild(head);
    if (c.output || (c.tool === "execute" && c.status === "running") || card.pre.textContent) {
      if (c.output !== undefined && c.output !== null && card.pre.dataset.seeded !== "1") { card.pre.textContent = c.output || ""; card.pre.dataset.seeded = "1"; }
      card.node.appendChild(card.pre);
    }
    if (c.summary && c.status !== "running") card.node.appendChild(el("p", { class: "summary" + (c.status === "error" ? " error" : ""), text: c.summary }));
  }
  function appendOutput(d) {
    var card = cards[d.id];
    if (!card) return;
    var t = card.pre.textContent + d.text;
    if (t.length > TAIL) t = t.slice(t.length - TAIL);
    card.pre.textContent = t;
    card.pre.dataset.seeded = "1";
    if (!card.pre.parentNode) card.node.appendChild(card.pre);
    card.pre.scrollTop = card.pre.scrollHeight;
  }

  // --- approvals
  function drawApprovals(list) {
    var box = $("approvals");
    var had = box.contains(document.activeElement);
    box.textContent = "";
    if (!list.length) { box.appendChild(el("p", { class: "muted", text: "Nothing is waiting for a decision." })); return; }
    list.forEach(function (r) { box.appendChild(r.kind === "confirm" ? confirmCard(r) : questionCard(r)); });
    if (had) { var b = box.querySelector("button"); if (b) b.focus(); }
    document.title = "(" + list.length + ") Live · aibuddy";
  }
  function confirmCard(r) {
    var a = r.action, note = el("input", { type: "text", placeholder: "note for the model (optional)", "aria-label": "note" });
    var msg = el("span", { class: "muted", role: "status" });
    function send(decision) {
      return function () {
        post("/ui/api/approvals/" + encodeURIComponent(r.id), { digest: r.digest, decision: decision, note: note.value })
          .then(function () { msg.textContent = decision === "approve" ? "approved" : "rejected"; })
          .catch(function (e) { msg.textContent = e.message; msg.className = "error"; });
      };
    }
    return el("article", { class: "card pending confirm", "aria-label": "confirm " + a.Tool + " " + a.Target }, [
      el("header", {}, [el("strong", { text: "Confirm " + a.Tool }), el("span", { class: "muted", text: "task " + (r.taskId || "?") + " · call " + a.CallID })]),
      el("dl", {}, [
        el("dt", { text: "target" }), el("dd", {}, [el("code", { class: "target", text: a.Target })]),
        el("dt", { text: "scope" }), el("dd", { class: "scope", text: a.Scope }),
        el("dt", { text: "consequence" }), el("dd", { class: "consequence", text: a.Consequence }),
        el("dt", { text: "why asked" }), el("dd", { text: (a.Reasons || []).join("; ") }),
        el("dt", { text: "rule" }), el("dd", { text: a.Rule || "" }),
        a.Fix ? el("dt", { text: "to stop asking" }) : null, a.Fix ? el("dd", { text: a.Fix }) : null
      ]),
      el("div", { class: "actions" }, [
        el("button", { class: "approve", type: "button", onclick: send("approve"), text: "Approve" }),
        el("button", { class: "reject", type: "button", onclick: send("reject"), text: "Reject" }), note, msg])
    ]);
  }
  function questionCard(r) {
    var q = r.question, msg = el("span", { class: "muted", role: "status" });
    function send(body) {
      post("/ui/api/questions/" + encodeURIComponent(r.id), body)
        .then(function () { msg.textContent = "answered"; })
        .catch(function (e) { msg.textContent = e.message; msg.className = "error"; });
    }
    var actions = el("div", { class: "actions" });
    if (q.Options && q.Options.length) {
      q.Options.forEach(function (o) { actions.appendChild(el("button", { type: "button", onclick: function () { send({ answer: o }); }, text: o })); });
    } else {
      var input = el("input", { type: "text", "aria-label": "your answer" });
      actions.appendChild(input);
      actions.appendChild(el("button", { type: "button", class: "approve", onclick: function () { send({ answer: input.value }); }, text: "Send" }));
    }
    actions.appendChild(el("button", { type: "button", onclick: function () { send({ declined: true }); }, text: "Decline" }));
    actions.appendChild(msg);
    return el("article", { class: "card pending question", "aria-label": "question" }, [
      el("header", {}, [el("strong", { text: "Question" }), el("span", { class: "muted", text: "task " + (r.taskId || "?") })]),
      el("p", { text: q.Text }), actions]);
  }

  // --- sessions, servers, exclusions
  function drawSessions(list) {
    var box = $("sessions"); box.textContent = "";
    if (!list.length) { box.appendChild(el("p", { class: "muted", text: "No MCP session is open." })); return; }
    list.forEach(function (s) {
      box.appendChild(el("div", { class: "card" }, [
        el("header", {}, [el("strong", { text: "task " + s.taskId }), el("span", { class: "muted", text: s.active.length + " tools listed" + (s.deferred && s.deferred.length ? ", " + s.deferred.length + " deferred" : "") })]),
        s.activated && s.activated.length ? el("p", { text: "activated by tool_search: " + s.activated.join(", ") }) : null,
        el("ul", { class: "tools" }, s.active.map(function (n) { return el("li", {}, [el("code", { text: n })]); }))
      ]));
    });
  }
  function drawServers(list) {
    var box = $("servers"); box.textContent = "";
    if (!list.length) { box.appendChild(el("p", { class: "muted", text: "None configured." })); return; }
    box.appendChild(el("table", {}, [el("thead", {}, [el("tr", {}, ["server", "state", "tools", "gate"].map(function (h) { return el("th", { text: h }); }))]),
      el("tbody", {}, list.map(function (s) {
        return el("tr", {}, [el("td", { text: s.name }), el("td", { text: s.state + (s.error ? ": " + s.error : "") }), el("td", { text: String(s.tools) }), el("td", { text: s.gate })]);
      }))]));
  }
  function drawExclusions(list) {
    var box = $("exclusions"); box.textContent = "";
    if (!list.length) { box.appendChild(el("p", { class: "muted", text: "Nothing excluded." })); return; }
    box.appendChild(el("ul", {}, list.map(function (x) {
      return el("li", {}, [el("code", { text: x.tool || "(" + x.group + ")" }), " " + x.reason + ": " + x.detail]);
    })));
  }

  // --- snapshot and stream
  function load() {
    return fetch("/ui/api/snapshot", { credentials: "same-origin" }).then(function (r) {
      if (r.status === 401) { location.href = "/ui/login?next=/ui/"; throw new Error("logged out"); }
      return r.json();
    }).then(function (s) {
      seq = s.seq;
      cards = {}; $("calls").textContent = "";
      if (!s.calls.length) $("calls").appendChild(el("p", { class: "muted", text: "No calls yet." }));
      s.calls.forEach(drawCall);
      drawApprovals(s.approvals); drawSessions(s.sessions); drawServers(s.servers); drawExclusions(s.exclusions);
      return s;
    });
  }
  function fresh(e) { var id = parseInt(e.lastEventId, 10); if (isNaN(id) || id <= seq) return false; seq = id; return true; }
  function connect() {
    if (es) es.close();
    es = new EventSource("/ui/events?since=" + seq);
    es.onopen = function () { status("live", "on"); };
    es.onerror = function () { status("reconnecting…", "off"); };
    es.addEventListener("gap", function () { status("caught up after a gap", "on"); load(); });
    es.addEventListener("call", function (e) { if (fresh(e)) drawCall(JSON.parse(e.data)); });
    es.addEventListener("stage", function (e) {
      if (!fresh(e)) return; var d = JSON.parse(e.data), c = cards[d.id]; if (c) { c.c.stage = d.stage; drawCall(c.c); }
    });
    es.addEventListener("output", function (e) { if (fresh(e)) appendOutput(JSON.parse(e.data)); });
    es.addEventListener("beat", function (e) {
      if (!fresh(e)) return; var d = JSON.parse(e.data), c = cards[d.id]; if (c) { c.c.lastBeat = d.at; drawCall(c.c); }
    });
    es.addEventListener("approvals", function (e) { if (fresh(e)) drawApprovals(JSON.parse(e.data)); });
    es.addEventListener("refresh", function (e) { if (fresh(e)) load(); });
  }
  setInterval(function () { // running durations tick
    Object.keys(cards).forEach(function (id) { var c = cards[id]; if (c.c.status === "running") { var t = c.node.querySelector(".took"); if (t) t.textContent = elapsed(c.c); } });
  }, 1000);
  load().then(connect).catch(function (e) { status(e.message, "off"); });
})();
