// The console's lists: a value the layout truncates (the id column's link, a session link: Django's own markup
// has no title) shows its whole text on hover. A static file, not an inline script: the Content-Security-Policy
// allows the site's own files only.
document.addEventListener("DOMContentLoaded", () => {
  const cut = "#result_list .field-id > a, #result_list td > a, #result_list td > span, .console-table .col-id > a";
  for (const element of document.querySelectorAll(cut)) {
    const truncated = element.scrollWidth > element.clientWidth || element.closest(".field-id") !== null;
    if (!element.title && truncated) element.title = element.textContent.trim();
  }
});
