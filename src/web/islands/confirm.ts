/**
 * Island: asks before a form that changes something is sent. A form with `data-confirm="…"`
 * shows that question first; without JavaScript the form is sent as is (the server does not
 * depend on the question being asked).
 */
for (const form of document.querySelectorAll<HTMLFormElement>("form[data-confirm]")) {
  form.addEventListener("submit", (event) => {
    if (!window.confirm(form.dataset.confirm ?? "Are you sure?")) event.preventDefault();
  });
}
export {};
