// The Graph page: fetch the neighbourhood the server chose (/graph/data), draw it with
// cytoscape at the positions the server computed (or in rings by hop, with
// ?layout=concentric), load an item's panel when it is clicked, and redraw as the "as of"
// slider moves. No inline script or style anywhere (the Content-Security-Policy forbids it).
//
// For tests and benchmarks: window.mnemodbGraph is the cytoscape instance; #graph carries
// data-state (loading, ready, error) and, after each drawing, data-layout-ms (the layout
// run), data-draw-ms (from the data's arrival to the first frame drawn) and data-fetch-ms.
(function () {
  "use strict";

  var DEBOUNCE_MS = 250;
  var STYLE = [
    { selector: "node", style: {
      "label": "data(label)", "font-size": 10, "color": "#1d232b", "text-valign": "bottom", "text-margin-y": 3,
      "text-max-width": 140, "text-wrap": "ellipsis", "min-zoomed-font-size": 7,
      "width": 14, "height": 14, "background-color": "#7b8794"
    } },
    { selector: "node.entity", style: { "background-color": "#2f5f98", "shape": "ellipse" } },
    { selector: "node.memory", style: { "background-color": "#c98a2b", "shape": "round-rectangle" } },
    // The centre's, the hits' and the folded nodes' labels show at any zoom; the others
    // once they are large enough to read.
    { selector: "node.center", style: {
      "width": 26, "height": 26, "border-width": 3, "border-color": "#1d232b", "font-size": 13, "font-weight": "bold",
      "z-index": 20, "min-zoomed-font-size": 0
    } },
    { selector: "node.hit", style: {
      "width": 20, "height": 20, "border-width": 4, "border-color": "#f0b400", "font-weight": "bold", "z-index": 15,
      "min-zoomed-font-size": 0
    } },
    { selector: "node.faded", style: { "opacity": 0.4 } },
    { selector: "node.folded", style: {
      "shape": "round-rectangle", "width": 74, "height": 20, "background-color": "#ffffff",
      "border-width": 1.5, "border-style": "dashed", "border-color": "#5d6875", "text-valign": "center",
      "text-margin-y": 0, "font-size": 11, "color": "#1d232b", "min-zoomed-font-size": 0, "z-index": 10
    } },
    { selector: "node:selected", style: { "overlay-color": "#2f5f98", "overlay-opacity": 0.18, "overlay-padding": 6 } },
    { selector: "edge", style: {
      "width": 1.3, "line-color": "#8a96a3", "curve-style": "bezier", "target-arrow-shape": "triangle",
      "target-arrow-color": "#8a96a3", "arrow-scale": 0.7, "label": "data(type)", "font-size": 8,
      "min-zoomed-font-size": 10, "color": "#5d6875", "text-rotation": "autorotate"
    } },
    { selector: "edge.ended", style: {
      "line-style": "dashed", "line-color": "#c3c9d0", "target-arrow-color": "#c3c9d0", "color": "#9aa5b1"
    } },
    { selector: "edge.folded", style: { "line-style": "dotted", "target-arrow-shape": "none", "label": "" } }
  ];

  var container = null;
  var cy = null;
  var slider = null;
  var chosen = null;   // the time shown, ms since the epoch; null for now
  var inflight = null;
  var timer = null;
  var generation = 0;
  var panelRequest = 0;

  function byId(id) { return document.getElementById(id); }

  function iso(ms) { return new Date(ms).toISOString().replace(".000Z", "Z"); }

  function setState(value) { container.setAttribute("data-state", value); }

  function say(text, isError) {
    var status = byId("graph-status");
    if (!status) return;
    status.textContent = text || "";
    status.classList.toggle("error", Boolean(isError));
  }

  // The data's parameters: the page's, with the slider's time.
  function params() {
    var query = new URLSearchParams(container.getAttribute("data-query") || "");
    if (chosen === null) query.delete("as_of"); else query.set("as_of", iso(chosen));
    return query;
  }

  function pageUrl(center) {
    var query = params();
    query.set("center", center);
    return container.getAttribute("data-page") + "?" + query.toString();
  }

  function showTime() {
    var label = byId("as-of-label");
    var field = byId("as-of-field");
    if (label) label.textContent = chosen === null ? "now" : iso(chosen);
    if (field) field.value = chosen === null ? "" : iso(chosen);
  }

  // The address bar keeps the time shown: a reload or a shared link shows the same.
  function keepInUrl() {
    var url = new URL(window.location.href);
    if (chosen === null) url.searchParams.delete("as_of"); else url.searchParams.set("as_of", iso(chosen));
    window.history.replaceState(null, "", url.toString());
  }

  // The slider: a step of at most 1/2000 of its span (whole seconds), its left end moved so
  // that its right end, now, is a step.
  function fitSlider(oldest) {
    if (!slider) return;
    var max = Number(slider.max);
    var min = Math.min(Number(slider.min), oldest === null || oldest === undefined ? Infinity : oldest);
    var step = Math.max(1000, Math.ceil((max - min) / 2000 / 1000) * 1000);
    slider.step = String(step);
    slider.min = String(max - Math.ceil((max - min) / step) * step);
    slider.value = String(chosen === null ? max : Math.max(Number(slider.min), Math.min(chosen, max)));
  }

  function load() {
    if (inflight) inflight.abort();
    var controller = new AbortController();
    inflight = controller;
    var mine = ++generation;
    setState("loading");
    var started = performance.now();
    fetch(container.getAttribute("data-src") + "?" + params().toString(), {
      headers: { "HX-Request": "true", "Accept": "application/json" },
      credentials: "same-origin",
      signal: controller.signal
    }).then(function (response) {
      var redirect = response.headers.get("HX-Redirect");
      if (response.status === 401 && redirect) {
        window.location.assign(redirect);
        return null;
      }
      return response.json().then(function (body) { return { ok: response.ok, body: body }; });
    }).then(function (result) {
      if (!result || mine !== generation) return;
      container.setAttribute("data-fetch-ms", (performance.now() - started).toFixed(1));
      if (!result.ok) {
        say(result.body && result.body.error ? result.body.error : "The graph could not be drawn.", true);
        setState("error");
        return;
      }
      draw(result.body, mine);
    }).catch(function (error) {
      if (error && error.name === "AbortError") return;
      if (mine !== generation) return;
      say("The graph could not be loaded: " + (error && error.message ? error.message : error), true);
      setState("error");
    });
  }

  function layoutOptions() {
    if (container.getAttribute("data-layout") === "concentric") {
      return {
        name: "concentric", fit: true, padding: 30, animate: false, minNodeSpacing: 8,
        concentric: function (node) { return 10 - node.data("depth"); },
        levelWidth: function () { return 1; }
      };
    }
    return { name: "preset", fit: true, padding: 30, animate: false };
  }

  function draw(body, mine) {
    var started = performance.now();
    if (!cy) {
      cy = window.cytoscape({
        container: container, style: STYLE, elements: [], minZoom: 0.05, maxZoom: 4, boxSelectionEnabled: false
      });
      window.mnemodbGraph = cy;
      bind();
    }
    scaledAt = null;
    cy.batch(function () {
      cy.elements().remove();
      cy.add(body.nodes.concat(body.edges));
      if (body.counts.hits > 0) cy.nodes().not(".hit").not(".center").not(".folded").addClass("faded");
    });
    var before = performance.now();
    cy.layout(layoutOptions()).run();
    var layoutMs = performance.now() - before;
    container.setAttribute("data-layout-ms", layoutMs.toFixed(1));
    keepReadable();
    fitSlider(body.oldest);
    describe(body, layoutMs);
    // Ready once the drawing has been painted: two frames later.
    window.requestAnimationFrame(function () {
      window.requestAnimationFrame(function () {
        if (mine !== generation) return;
        container.setAttribute("data-draw-ms", (performance.now() - started).toFixed(1));
        setState("ready");
      });
    });
  }

  function describe(body, layoutMs) {
    if (body.message) { say(body.message, false); return; }
    var ended = cy.edges(".ended").length;
    var parts = [
      body.counts.items + " item" + (body.counts.items === 1 ? "" : "s"),
      body.counts.edges + " relation" + (body.counts.edges === 1 ? "" : "s") + (ended ? " (" + ended + " ended)" : ""),
      "within " + body.hops + " hop" + (body.hops === 1 ? "" : "s"),
      "as of " + (body.as_of || "now")
    ];
    if (body.counts.folded) parts.push(body.counts.folded + " folded");
    if (params().get("q")) parts.push(body.counts.hits + " found by the words");
    var text = parts.join(" · ") + ". Laid out in " + layoutMs.toFixed(0) + " ms.";
    if (body.truncated) text += " Capped at " + body.limit + " nodes: the rest is folded.";
    say(text, false);
  }

  // The centre and the folded nodes stay readable however far the drawing is zoomed out:
  // they grow as the zoom shrinks (a few nodes: styled one by one).
  var SCALED = [
    [".center", { "font-size": 13, "width": 26, "height": 26, "border-width": 3, "text-max-width": 160 }],
    [".folded", { "font-size": 11, "width": 74, "height": 20, "border-width": 1.5, "text-max-width": 90 }]
  ];
  var scaledAt = null;
  function keepReadable() {
    var factor = Math.min(4, Math.max(1, 1 / cy.zoom()));
    if (scaledAt !== null && Math.abs(factor - scaledAt) < 0.05) return;
    scaledAt = factor;
    cy.batch(function () {
      SCALED.forEach(function (entry) {
        var sizes = {};
        Object.keys(entry[1]).forEach(function (name) { sizes[name] = entry[1][name] * factor; });
        cy.nodes(entry[0]).style(sizes);
      });
    });
  }

  function bind() {
    cy.on("zoom", keepReadable);
    cy.on("tap", "node", function (event) {
      var node = event.target;
      if (node.hasClass("folded")) {
        var of = node.data("of");
        if (of !== container.getAttribute("data-center")) window.location.assign(pageUrl(of));
        else openPanel(of, node.data("hidden"));
        return;
      }
      openPanel(node.id(), 0);
    });
    cy.on("dbltap", "node", function (event) {
      var node = event.target;
      var id = node.hasClass("folded") ? node.data("of") : node.id();
      if (id !== container.getAttribute("data-center")) window.location.assign(pageUrl(id));
    });
    cy.on("mouseover", "node, edge", function (event) { showTip(event.target.data("title"), event.renderedPosition); });
    cy.on("mouseout", "node, edge", hideTip);
    cy.on("viewport", hideTip);
  }

  function showTip(text, where) {
    var tip = byId("graph-tip");
    if (!tip || !text || !where) return;
    tip.textContent = text;
    tip.style.left = Math.round(where.x + 12) + "px";
    tip.style.top = Math.round(where.y + 12) + "px";
    tip.hidden = false;
  }

  function hideTip() {
    var tip = byId("graph-tip");
    if (tip) tip.hidden = true;
  }

  function openPanel(id, folded) {
    var panel = byId("node-panel");
    if (!panel) return;
    var query = params();
    query.delete("center");
    if (folded) query.set("folded", String(folded));
    var mine = ++panelRequest;
    panel.setAttribute("aria-busy", "true");
    fetch(container.getAttribute("data-panel") + encodeURIComponent(id) + "?" + query.toString(), {
      headers: { "HX-Request": "true" },
      credentials: "same-origin"
    }).then(function (response) {
      var redirect = response.headers.get("HX-Redirect");
      if (response.status === 401 && redirect) {
        window.location.assign(redirect);
        return null;
      }
      return response.text();
    }).then(function (html) {
      if (html === null || mine !== panelRequest) return;
      panel.innerHTML = html;
      panel.setAttribute("data-id", id);
      panel.removeAttribute("aria-busy");
    }).catch(function () {
      if (mine !== panelRequest) return;
      panel.textContent = "The item could not be loaded.";
      panel.removeAttribute("aria-busy");
    });
  }

  function start() {
    container = byId("graph");
    if (!container || container.getAttribute("data-started")) return;
    container.setAttribute("data-started", "1");
    if (typeof window.cytoscape !== "function") {
      say("The drawing library did not load.", true);
      setState("error");
      return;
    }
    slider = byId("as-of");
    var field = byId("as-of-field");
    var asked = field && field.value ? Date.parse(field.value) : NaN;
    chosen = isNaN(asked) ? null : asked;
    fitSlider(null);
    if (slider) {
      slider.addEventListener("input", function () {
        chosen = Number(slider.value) >= Number(slider.max) ? null : Number(slider.value);
        showTime();
        window.clearTimeout(timer);
        timer = window.setTimeout(function () { keepInUrl(); load(); }, DEBOUNCE_MS);
      });
    }
    var now = byId("as-of-now");
    if (now) {
      now.addEventListener("click", function () {
        chosen = null;
        if (slider) slider.value = slider.max;
        showTime();
        window.clearTimeout(timer);
        keepInUrl();
        load();
      });
    }
    showTime();
    load();
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
