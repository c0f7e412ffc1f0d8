/* WCAG contrast of every visible text of the page on what is behind it: the text's computed
   colour over its element's and its ancestors' backgrounds (composited by alpha; a gradient
   by each of its colour stops, the worst counts). Run by tests/report/test_published_site.py. */
() => {
  function parse(text) {
    var m = /rgba?\(([^)]+)\)/.exec(text);
    if (!m) { return null; }
    var p = m[1].split(/[\s,\/]+/).filter(Boolean).map(Number);
    return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1];
  }
  function luminance(c) {
    function f(v) { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); }
    return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]);
  }
  function over(top, under) {
    return [0, 1, 2].map(function (i) { return top[i] * top[3] + under[i] * (1 - top[3]); }).concat([1]);
  }
  function behind(el) {
    var layers = [];
    for (var e = el; e; e = e.parentElement) {
      var s = getComputedStyle(e);
      var stops = (s.backgroundImage.match(/rgba?\([^)]+\)/g) || []).map(parse);
      if (stops.length) { layers.push(stops); if (stops.every(function (c) { return c[3] >= 1; })) { break; } }
      var bg = parse(s.backgroundColor);
      if (bg && bg[3] > 0) { layers.push([bg]); if (bg[3] >= 1) { break; } }
    }
    var base = [[255, 255, 255, 1]];  /* the canvas */
    if (layers.length && layers[layers.length - 1].every(function (c) { return c[3] >= 1; })) { base = layers.pop(); }
    for (var i = layers.length - 1; i >= 0; i--) {
      var layer = layers[i];
      base = [].concat.apply([], base.map(function (b) { return layer.map(function (l) { return over(l, b); }); }));
    }
    return base;
  }
  var out = [];
  var seen = new Set();
  var walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (var n = walker.nextNode(); n; n = walker.nextNode()) {
    var el = n.parentElement;
    if (!n.textContent.trim() || seen.has(el)) { continue; }
    seen.add(el);
    var s = getComputedStyle(el);
    if (!el.getClientRects().length || s.visibility === "hidden") { continue; }
    var fg = parse(s.color);
    var size = parseFloat(s.fontSize);
    var large = size >= 24 || (parseInt(s.fontWeight, 10) >= 700 && size >= 18.66);
    behind(el).forEach(function (bg) {
      var text = over(fg, bg);
      var a = luminance(text), b = luminance(bg);
      out.push({text: n.textContent.trim().slice(0, 40), where: el.tagName.toLowerCase() + (el.className ? "." + String(el.className).split(" ").join(".") : ""),
                color: s.color, background: "rgb(" + bg.slice(0, 3).map(Math.round).join(", ") + ")",
                ratio: (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05), large: large});
    });
  }
  return out;
}
