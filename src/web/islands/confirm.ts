/**
 * Island: asks before a form that changes something is sent. Any form with `data-confirm="…"`
 * (on every page: the layout loads this island everywhere) shows that question first; without
 * JavaScript the form is sent as is, and the server never depends on the question being asked.
 */
document.addEventListener("submit", (event) => {
  const form = event.target;
  if (!(form instanceof HTMLFormElement)) return;
  const question = form.dataset.confirm;
  if (question !== undefined && !window.confirm(question)) event.preventDefault();
});

export {};
