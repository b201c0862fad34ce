// cpersona console: the only script. A confirm dialog before a form marked data-confirm is
// sent (the server still asks for its own confirmation field), and a chosen trace file read
// into the paste box. Everything works without it except the dialog and the file picker.
"use strict";
document.addEventListener("submit", function (event) {
  var form = event.target;
  var question = form.getAttribute("data-confirm");
  if (question && !window.confirm(question)) {
    event.preventDefault();
  }
});
document.addEventListener("change", function (event) {
  var input = event.target;
  if (input.id !== "trace-file" || !input.files || !input.files[0]) {
    return;
  }
  input.files[0].text().then(function (text) {
    document.getElementById("trace-text").value = text;
  });
});
