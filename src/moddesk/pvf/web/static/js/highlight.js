// Syntax colouring of PVF script text (#PVF_File form): sections, numbers, strings, links, commands.
// Presentation only: each token span carries its 1-based line and UTF-16 column for hovers.
const esc = (s) => s.replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);
const TOKEN = /(#PVF_File)|(\[\/?[^\]\t`\n]+\])|(<\d+::[^`>]*`[^`]*`>)|(\{\d+=[^}]*\})|(`)|(-?\d+(?:\.\d+)?)/g;

function span(cls, text, line, col) { return `<span class="${cls}" data-l="${line}" data-c="${col}" data-e="${col + text.length}">${esc(text)}</span>`; }

// Returns one HTML string per line; ``inString`` carries a backquoted string across lines.
export function highlight(text) {
  const out = [];
  let inString = false;
  const lines = text.split("\n");
  for (let n = 0; n < lines.length; n++) {
    const line = lines[n], no = n + 1;
    let html = "", pos = 0;
    if (inString) {
      const close = line.indexOf("`");
      const end = close < 0 ? line.length : close + 1;
      html += span("t-string", line.slice(0, end), no, 1);
      pos = end;
      inString = close < 0;
    }
    while (pos < line.length && !inString) {
      TOKEN.lastIndex = pos;
      const m = TOKEN.exec(line);
      if (!m) { html += esc(line.slice(pos)); pos = line.length; break; }
      html += esc(line.slice(pos, m.index));
      const col = m.index + 1;
      if (m[1]) html += span("t-comment", m[1], no, col);
      else if (m[2]) html += span("t-section", m[2], no, col);
      else if (m[3]) html += span("t-link", m[3], no, col);
      else if (m[4]) html += span("t-command", m[4], no, col);
      else if (m[6]) html += span("t-number", m[6], no, col);
      else {
        const close = line.indexOf("`", m.index + 1);
        const end = close < 0 ? line.length : close + 1;
        const body = line.slice(m.index, end);
        html += span(/^`\[[^\]]+\]`$/.test(body) ? "t-command" : "t-string", body, no, col);
        if (close < 0) inString = true;
        pos = end;
        continue;
      }
      pos = m.index + m[0].length;
    }
    out.push(html);
  }
  return out;
}
