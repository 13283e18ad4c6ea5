// Keyboard review: a approve, r reject, n needs review (each saves and opens the next sample),
// j next, k previous. Keys are ignored while typing in the notes; Esc leaves the box.
(function () {
  "use strict";
  var ACTIONS = { a: "approve", r: "reject", n: "needs_review" };

  function typing(target) {
    return target && (target.tagName === "TEXTAREA" || target.tagName === "INPUT" || target.tagName === "SELECT" ||
      target.isContentEditable);
  }

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    if (typing(event.target)) {
      if (event.key === "Escape") event.target.blur();
      return;
    }
    var key = event.key.toLowerCase();
    if (ACTIONS[key]) {
      var button = document.querySelector('#ds-form button[value="' + ACTIONS[key] + '"]');
      if (button && !button.disabled) {
        event.preventDefault();
        document.querySelectorAll("#ds-form button").forEach(function (b) { b.disabled = true; });
        var form = document.getElementById("ds-form");
        var hidden = document.createElement("input");
        hidden.type = "hidden";
        hidden.name = "action";
        hidden.value = ACTIONS[key];
        form.appendChild(hidden);
        form.submit();
      }
    } else if (key === "j" || key === "k") {
      var link = document.getElementById(key === "j" ? "ds-next" : "ds-prev");
      if (link) {
        event.preventDefault();
        window.location.href = link.href;
      }
    }
  });
})();
