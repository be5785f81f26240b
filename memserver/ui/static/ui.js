// memserver review page: keyboard shortcuts only; every page works without this file.
// "/" focuses the search box; "j" / "k" move between the items of a list; Enter on a
// focused item opens its first link.
(function () {
  "use strict";
  function typing(el) {
    return el && (el.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(el.tagName));
  }
  function items() {
    return Array.prototype.slice.call(document.querySelectorAll("main .item"));
  }
  function move(step) {
    var all = items();
    if (!all.length) return;
    var at = all.findIndex(function (el) { return el.classList.contains("current"); });
    var next = Math.max(0, Math.min(all.length - 1, at + step));
    if (at >= 0) all[at].classList.remove("current");
    var el = all[next];
    el.classList.add("current");
    var link = el.querySelector("a, button");
    if (link) link.focus(); else el.scrollIntoView({ block: "nearest" });
  }
  document.addEventListener("keydown", function (ev) {
    if (ev.ctrlKey || ev.metaKey || ev.altKey || typing(document.activeElement)) return;
    if (ev.key === "/") {
      var box = document.getElementById("q") || document.getElementById("quick-q");
      if (box) { ev.preventDefault(); box.focus(); box.select(); }
    } else if (ev.key === "j") {
      move(1);
    } else if (ev.key === "k") {
      move(-1);
    }
  });
})();
