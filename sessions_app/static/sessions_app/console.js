// The console's lists: a truncated id (Django's own link in the first column has no title) shows the whole id
// on hover. A static file, not an inline script: the Content-Security-Policy allows the site's own files only.
document.addEventListener("DOMContentLoaded", () => {
  for (const link of document.querySelectorAll("#result_list .field-id > a, .console-table .col-id > a")) {
    if (!link.title) link.title = link.textContent.trim();
  }
});
