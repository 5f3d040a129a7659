/* perfgate's part of the sign-off page, around pytest-html 4's own script (app.js).

pytest-html renders the whole table from its data (the data-jsonblob of #data-container) and
draws it again on every click, sort or filter; a row's collapsed state comes from its outcome
category only. So, with its code left as it is:

1. Before pytest-html reads its data (a MutationObserver sees #data-container inserted; the
   parser delivers that before it runs the next script): the row template loses its unused
   image and video players when no test has media, and a table of more than PAGE_ROWS rows
   is cut to one page of them, in the order and filter pytest-html is about to apply (URL
   ?page=N, ?rows=N or ?rows=all). Sorting or filtering a paged table reloads it at page 1.
2. pytest-html draws its table once at its start, every row of a passed test collapsed, and
   again on a filter change, with the collapsed rows it keeps in sessionStorage. So its first
   drawing is made empty (its ?visible= parameter naming no outcome it knows, for that drawing
   only), and once it has started the table is drawn once: its collapsed rows less the rows
   to look at (CONFIG.open), through its own filter handler.
3. A row's detail block is a stub in pytest-html's data; its HTML waits in a
   <script type="application/json" id="pg-d-ROW"> and is filled in when the row is open and
   near the view (the first FILL_NOW at once), after every redraw; all of them before printing.
*/
(function () {
  "use strict";
  var CONFIG = JSON.parse(document.getElementById("pg-config").textContent);
  var PAGE_ROWS = CONFIG.pageRows;
  var FILL_NOW = CONFIG.fillNow;
  var FILTERS = ["passed", "skipped", "failed", "error", "xfailed", "xpassed", "rerun"];
  var INITIAL_ORDER = ["Error", "Failed", "Rerun", "XFailed", "XPassed", "Skipped", "Passed"];
  // pytest-html's first drawing is the one to skip: it is made with no row, its own URL
  // parameter ?visible= naming no outcome it knows (this one), and the one drawing made here
  // shows them all. The history entry of the page's load keeps that URL: a load from it is a
  // load without ?visible=.
  var FIRST_DRAWING = "perfgate-first-drawing";
  var SKIP_FIRST = "perfgate-plain-drawing";  // set when that failed once: draw plainly
  var params = new URLSearchParams(location.search);
  if (params.get("visible") === FIRST_DRAWING) params.delete("visible");
  var state = {
    paged: false, hidden: false, visibleParam: null, ids: {}, pageOf: {}, page: 1, pages: 1,
  };

  // --- 1. before pytest-html reads its data --------------------------------------------

  function visibleCategories() {
    var v = params.get("visible");
    if (v === null) return FILTERS;
    return v.split(",").map(function (s) { return s.toLowerCase(); })
      .filter(function (s) { return FILTERS.indexOf(s) >= 0; });
  }

  function durationMs(d) {
    if (d.indexOf(":") >= 0) {
      var p = d.split(":").map(Number);
      return (p[0] * 3600 + p[1] * 60 + p[2]) * 1000;
    }
    return parseInt(d, 10);
  }

  // The order pytest-html's first drawing uses (its doInitSort), so a page holds the rows
  // the whole table would show there.
  function sortLikePytestHtml(tests, initialSort) {
    var key = params.get("sort") || initialSort || "result";
    var ascending = JSON.parse(sessionStorage.getItem("sortAsc")) || false;
    if (key.toLowerCase() === "original") return tests;
    var cmp;
    if (key === "duration") {
      cmp = function (a, b) { return durationMs(a.duration) - durationMs(b.duration); };
    } else if (key === "result") {
      cmp = function (a, b) {
        var at = a.result.toLowerCase(), bt = b.result.toLowerCase();
        var ai = INITIAL_ORDER.findIndex(function (x) { return x.toLowerCase() === at; });
        var bi = INITIAL_ORDER.findIndex(function (x) { return x.toLowerCase() === bt; });
        return ai - bi;
      };
    } else {
      cmp = function (a, b) { return a[key] === b[key] ? 0 : a[key] > b[key] ? 1 : -1; };
    }
    var sorted = tests.slice().sort(cmp);
    if (ascending) sorted.reverse();
    return sorted;
  }

  function fromHash(text) {
    try {
      return decodeURIComponent(text);
    } catch (e) {  // a malformed %-escape: the text as it is
      return text;
    }
  }

  function pageSize() {
    var rows = params.get("rows");
    if (rows === "all") return Infinity;
    var n = parseInt(rows, 10);
    return n > 0 ? n : PAGE_ROWS;
  }

  function lightenTemplate(tests) {
    var media = tests.some(function (t) {
      return (t.extras || []).some(function (e) {
        return e.format_type === "image" || e.format_type === "video";
      });
    });
    var template = document.getElementById("template_results-table__tbody");
    if (media || !template) return;
    // pytest-html hides .media for a test without any; its players cost every row a video
    // element (with its controls) that nothing shows.
    template.content.querySelectorAll(".media-container__viewport > *").forEach(function (e) {
      e.remove();
    });
  }

  function beforePytestHtml(container) {
    var data = JSON.parse(container.dataset.jsonblob);
    var all = [];
    Object.keys(data.tests).forEach(function (nodeid) {
      data.tests[nodeid].forEach(function (t) { all.push([nodeid, t]); });
    });
    lightenTemplate(all.map(function (x) { return x[1]; }));
    var size = pageSize();
    var shown = all;
    if (all.length > size) {
      var visible = visibleCategories();
      var kept = all.filter(function (x) {
        return visible.indexOf(x[1].result.toLowerCase()) >= 0;
      });
      var byTest = new Map(kept.map(function (x) { return [x[1], x]; }));
      var ordered = sortLikePytestHtml(kept.map(function (x) { return x[1]; }), data.initialSort)
        .map(function (t) { return byTest.get(t); });
      state.pages = Math.max(1, Math.ceil(ordered.length / size));
      ordered.forEach(function (x, i) { state.pageOf[x[1].testId] = 1 + Math.floor(i / size); });
      var wanted = fromHash(location.hash.slice(1));
      var page = parseInt(params.get("page"), 10) || 1;
      if (wanted && state.pageOf[wanted]) page = state.pageOf[wanted];
      state.page = Math.min(Math.max(1, page), state.pages);
      state.shownFrom = (state.page - 1) * size;
      shown = ordered.slice(state.shownFrom, state.shownFrom + size);
      state.kept = ordered.length;
      var tests = {};
      shown.forEach(function (x) { (tests[x[0]] = tests[x[0]] || []).push(x[1]); });
      data.tests = tests;
      container.dataset.jsonblob = JSON.stringify(data);
      state.paged = true;
      shown = [];
      Object.keys(tests).forEach(function (k) {
        tests[k].forEach(function (t) { shown.push([k, t]); });
      });
    }
    // pytest-html numbers its tests in this order: test_0, test_1, ...
    shown.forEach(function (x, i) { state.ids[x[1].testId] = "test_" + i; });
    hideFirstDrawing();
  }

  var early = new MutationObserver(function () {
    var container = document.getElementById("data-container");
    if (!container) return;
    early.disconnect();
    try {
      beforePytestHtml(container);
    } catch (e) {
      console.error("perfgate: the table is shown whole:", e);
    }
  });
  early.observe(document.body, { childList: true, subtree: true });

  // --- 2. once pytest-html has drawn the table: open the rows to look at -------------------

  function openIds() {
    var ids = [];
    CONFIG.open.forEach(function (testId) {
      var id = state.ids[testId];
      if (!id) {  // pytest-html read its data before perfgate could: ask its table
        var body = document.getElementById(testId);
        var row = body && body.querySelector("tr.collapsible");
        id = row && row.dataset.id;
      }
      if (id) ids.push(id);
    });
    return ids;
  }

  function hideFirstDrawing() {
    if (sessionStorage.getItem(SKIP_FIRST)) return;
    state.visibleParam = params.get("visible");
    var u = new URL(location.href);
    u.searchParams.set("visible", FIRST_DRAWING);
    history.replaceState(history.state, "", u.href);
    state.hidden = true;
  }

  function restoreUrl() {
    var u = new URL(location.href);  // pytest-html has added its ?sort= meanwhile
    if (state.visibleParam === null) u.searchParams.delete("visible");
    else u.searchParams.set("visible", state.visibleParam);
    history.replaceState(history.state, "", u.href);
  }

  // The one drawing: the rows to look at open (unless the reader's URL says which to collapse,
  // pytest-html's ?collapsed=), through pytest-html's own state (sessionStorage collapsedIds)
  // and its filter handler, which draws once with exactly the stored ids collapsed.
  function drawWithRowsOpen() {
    if (state.hidden) restoreUrl();
    var collapsed = JSON.parse(sessionStorage.getItem("collapsedIds")) || [];
    var open = new Set(params.has("collapsed") ? [] : openIds());
    var kept = collapsed.filter(function (id) { return !open.has(id); });
    if (kept.length === collapsed.length && !state.hidden) return;  // drawn right already
    sessionStorage.setItem("collapsedIds", JSON.stringify(kept));
    var shown = visibleCategories();
    var box = Array.prototype.find.call(
      document.querySelectorAll('input[name="filter_checkbox"]'),
      function (b) { return shown.indexOf(b.dataset.testResult) >= 0; });
    if (!box) return;  // the reader's filter shows no outcome
    // A plain event (not a mouse click) runs pytest-html's handler without toggling the box:
    // it shows the box's outcome (shown already), filters, sorts and draws once.
    box.checked = true;
    box.dispatchEvent(new Event("click"));
  }

  // pytest-html's filter strip counts pytest outcomes, and a row to look at (INCONCLUSIVE,
  // NO_BASELINE, SHIFT, UNCONFIRMED) passes pytest: each count says the verdicts behind it, so
  // "3 Passed" never stands unexplained under a "Not ready" sign-off.
  function labelOutcomes() {
    var caption = document.querySelector("p.filter");
    if (caption) caption.textContent = "pytest's outcome of each row, with its verdicts; " +
      "(un)check the boxes to filter the results.";
    Object.keys(CONFIG.outcomeVerdicts || {}).forEach(function (outcome) {
      var span = document.querySelector(".filters span." + outcome);
      if (!span || !CONFIG.outcomeVerdicts[outcome]) return;
      var text = span.textContent.replace(/,\s*$/, "");
      span.textContent = text + " (" + CONFIG.outcomeVerdicts[outcome] + "),";
    });
  }

  function afterPytestHtml() {
    try {
      labelOutcomes();
      if (state.paged) setUpPaging();
      drawWithRowsOpen();
    } catch (e) {
      console.error("perfgate:", e);
      if (state.hidden) {  // the table would stay empty: draw it plainly instead
        sessionStorage.setItem(SKIP_FIRST, "1");
        restoreUrl();
        location.reload();
      }
    }
  }

  // --- 3. detail blocks, filled in when needed ---------------------------------------------

  var store = new Map();

  function fill(stub) {
    if (stub.dataset.pgFilled) return;
    var key = stub.dataset.detail;
    var html = store.get(key);
    if (html === undefined) {
      var src = document.getElementById(key);
      if (!src) return;  // not written yet: the stub says so
      html = JSON.parse(src.textContent);
      store.set(key, html);
    }
    stub.innerHTML = html;
    stub.dataset.pgFilled = "1";
  }

  var near = new IntersectionObserver(function (entries) {
    entries.forEach(function (e) {
      if (e.isIntersecting) {
        fill(e.target);
        near.unobserve(e.target);
      }
    });
  }, { rootMargin: "1200px 0px" });

  function openStubs() {
    return document.querySelectorAll(
      "#results-table tr.extras-row:not(.hidden) .pg-detail:not([data-pg-filled])");
  }

  function watchTable() {
    near.disconnect();
    openStubs().forEach(function (stub, i) {
      if (i < FILL_NOW) fill(stub); else near.observe(stub);
    });
  }

  // pytest-html replaces #results-table, a child of body, on every drawing
  new MutationObserver(watchTable).observe(document.body, { childList: true });
  window.addEventListener("beforeprint", function () { openStubs().forEach(fill); });

  // --- paging ------------------------------------------------------------------------------

  function goTo(page, hash) {
    var p = new URLSearchParams(location.search);
    if (page > 1) p.set("page", page); else p.delete("page");
    location.assign(location.pathname + (p.toString() ? "?" + p : "") + (hash || ""));
  }

  function pagerHtml() {
    var size = pageSize();
    var first = state.shownFrom + 1;
    var last = Math.min(state.shownFrom + size, state.kept);
    var parts = ["Rows " + first.toLocaleString() + "\u2013" + last.toLocaleString() + " of " +
      state.kept.toLocaleString() + " (page " + state.page + " of " + state.pages +
      ", in the table's order; sorting or filtering starts again at page 1): "];
    var link = function (page, text) {
      return '<a href="#" data-pg-page="' + page + '">' + text + "</a>";
    };
    if (state.page > 1) parts.push(link(1, "first"), " ", link(state.page - 1, "previous"), " ");
    if (state.page < state.pages) {
      parts.push(link(state.page + 1, "next"), " ", link(state.pages, "last"), " ");
    }
    parts.push('<a href="#" data-pg-all="1">all rows on one page</a>');
    return parts.join("");
  }

  function setUpPaging() {
    var pager = document.createElement("div");
    pager.className = "pg-pager";
    pager.innerHTML = pagerHtml();
    document.body.insertBefore(pager, document.getElementById("results-table"));
    pager.addEventListener("click", function (evt) {
      var a = evt.target.closest("a");
      if (!a) return;
      evt.preventDefault();
      if (a.dataset.pgAll) {
        var p = new URLSearchParams(location.search);
        p.set("rows", "all");
        p.delete("page");
        location.assign(location.pathname + "?" + p);
      } else {
        goTo(parseInt(a.dataset.pgPage, 10));
      }
    });
    // pytest-html sorts and filters the rows it holds: the page. Once its handler has kept
    // the new order or filter (URL, sessionStorage), the page is cut again from all rows.
    document.addEventListener("click", function (evt) {
      if (evt.target.closest(".sortable") || evt.target.matches('input[name="filter_checkbox"]')) {
        goTo(1);
      }
    });
    // a link to a row on another page (the sign-off's list) opens that page at the row
    document.addEventListener("click", function (evt) {
      var a = evt.target.closest('a[href^="#"]');
      var id = a && fromHash(a.getAttribute("href").slice(1));
      if (!id || document.getElementById(id) || !state.pageOf[id]) return;
      evt.preventDefault();
      goTo(state.pageOf[id], "#" + encodeURIComponent(id));
    }, true);
  }

  document.addEventListener("DOMContentLoaded", afterPytestHtml);
})();
