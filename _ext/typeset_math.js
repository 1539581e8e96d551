// Typesets the site's mathematics once, at build time (_ext/math_typesetting.py runs it), so that no reader's
// browser waits for MathJax: on a phone with a slow CPU the pages' runtime typesetting took 15-31 s (issue 37).
//
// Reads from standard input {"es5": the MathJax 3 es5 folder (the PyPI package the site already pins), "formulas":
// [[tex, display], ...]} and writes to standard output {"html": [CHTML markup per formula], "errors": [[index,
// message], ...], "css": the CHTML stylesheet for every character used}. The same MathJax as in the browser: TeX
// input with its autoloaded extensions, CHTML output with the woff2 fonts the site serves, and assistive MathML for
// screen readers. No menu, so no formula is a keyboard tab stop. Node only; nothing is downloaded.

const chunks = [];
process.stdin.on("data", (chunk) => chunks.push(chunk));
process.stdin.on("end", () => {
  const request = JSON.parse(Buffer.concat(chunks).toString("utf8"));
  global.MathJax = {
    loader: {
      paths: {mathjax: request.es5},
      load: ["adaptors/liteDOM", "input/tex", "output/chtml", "a11y/assistive-mml"],
      require: require,
    },
    // One stylesheet with the rules of the characters the site uses (the whole TeX font's rules weighed 0.24 MB),
    // served from _static/mathjax/ beside the fonts. The course pack's student edition typesets a subset of the
    // site's formulas and keeps its own stylesheet where it differs.
    chtml: {fontURL: "output/chtml/fonts/woff-v2", adaptiveCSS: true},
    options: {enableAssistiveMml: true},
    startup: {typeset: false},
  };
  require(request.es5 + "/startup.js");
  MathJax.startup.promise.then(async () => {
    const adaptor = MathJax.startup.adaptor;
    const html = [];
    const errors = [];
    for (const [index, [tex, display]] of request.formulas.entries()) {
      // The promise form waits for an extension the autoloader fetches (\boldsymbol, ...), as the browser does.
      const node = await MathJax.tex2chtmlPromise(tex, {display: display});
      const error = adaptor.tags(node, "mjx-merror")[0];
      if (error) errors.push([index, adaptor.getAttribute(error, "data-mjx-error") || adaptor.textContent(error)]);
      html.push(adaptor.outerHTML(node));
    }
    const css = adaptor.textContent(MathJax.chtmlStylesheet());
    process.stdout.write(JSON.stringify({html, errors, css}));
  }).catch((error) => {
    process.stderr.write(`typeset_math.js: ${error && error.stack || error}\n`);
    process.exit(1);
  });
});
