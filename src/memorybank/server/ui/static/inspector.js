// memorybank inspector: the only script, served from the package. Pages work without it;
// it only keeps a destructive button disabled until the confirmation text is typed.
"use strict";
document.addEventListener("DOMContentLoaded", () => {
  for (const input of document.querySelectorAll("input[data-expected]")) {
    const form = input.form;
    const button = form && form.querySelector("[data-confirm-button]");
    if (!button) continue;
    const sync = () => { button.disabled = input.value !== input.dataset.expected; };
    input.addEventListener("input", sync);
    sync();
  }
});
