// Keyboard choices on the comparison pages, as progressive enhancement: every form works
// without this file. Keys 1 to 5 pick the scale and move to the reason box; Enter there sends
// the form once a choice is made and a reason written (Shift+Enter: a new line), and only once.
// The time so far on a task page keeps counting; a refusal or the practice feedback is scrolled
// into view; a copy button copies the completion code.
(function () {
  "use strict";
  document.documentElement.classList.add("js");

  function typing(target) {
    if (!target || !target.tagName) return false;
    var tag = target.tagName.toLowerCase();
    if (tag === "textarea" || tag === "select" || target.isContentEditable) return true;
    return tag === "input" && !/^(radio|checkbox|submit|button)$/.test(target.type);
  }

  function ready(form) {
    var reason = form.querySelector("#rationale");
    return form.querySelector("input[name=choice]:checked") && reason && reason.value.trim();
  }

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    var form = document.getElementById("task-form");
    if (!form || !form.querySelector("#scale")) return;
    var reason = form.querySelector("#rationale");
    if (event.key === "Enter" && event.target === reason && !event.shiftKey) {
      event.preventDefault();
      if (ready(form) && !form.dataset.sent) {
        form.dataset.sent = "yes";
        form.requestSubmit();
      }
      return;
    }
    if (typing(event.target) || !/^[1-5]$/.test(event.key)) return;
    var choice = form.querySelector("input[name=choice][data-key='" + event.key + "']");
    if (!choice) return;
    event.preventDefault();
    choice.checked = true;
    if (reason) reason.focus();
  });

  // A form sent by the button is sent once too.
  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (form.id !== "task-form") return;
    if (form.dataset.submitted) {
      event.preventDefault();
      return;
    }
    form.dataset.submitted = "yes";
  });

  // What the last answer led to (a refusal, the practice feedback) is brought into view.
  var news = document.querySelector("#feedback, main .message");
  if (news && news.getBoundingClientRect().top > window.innerHeight * 0.6) {
    news.scrollIntoView({ block: "center" });
  }

  // A copy button puts the text of the element it names on the clipboard.
  document.addEventListener("click", function (event) {
    var button = event.target.closest && event.target.closest("button[data-copy]");
    if (!button) return;
    var source = document.getElementById(button.dataset.copy);
    if (!source || !navigator.clipboard) return;
    navigator.clipboard.writeText(source.textContent.trim()).then(function () {
      button.textContent = "Copied";
    });
  });

  var clock = document.getElementById("time-so-far");
  if (clock) {
    var start = Date.now() - 1000 * Number(clock.dataset.seconds || 0);
    var show = function () {
      var minutes = Math.floor((Date.now() - start) / 60000);
      clock.textContent = minutes < 1 ? "under a minute" : minutes + " min";
    };
    setInterval(show, 10000);
  }
})();
