// The account page: offer the browser's own time zone in one click (the select stays the
// source of truth; without JavaScript the button stays hidden).
document.addEventListener("DOMContentLoaded", () => {
  const select = document.getElementById("time-zone");
  const button = document.getElementById("browser-zone");
  if (!select || !button) return;
  let zone = "";
  try {
    zone = Intl.DateTimeFormat().resolvedOptions().timeZone || "";
  } catch (error) {
    return;
  }
  const option = Array.from(select.options).find((o) => o.value === zone);
  if (!option) return;
  button.querySelector("span").textContent = zone;
  button.hidden = false;
  button.addEventListener("click", () => {
    select.value = zone;
    select.focus();
  });
});
