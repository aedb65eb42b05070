// How a box's label is written in the room it has: the whole text on one line, else on two
// lines, else a readable abbreviation, else cut with "…". Only the first three count as
// "labelled" (the benchmark's figure): a cut label is drawn but does not read.
// Readable abbreviations (the whole label stays in the panel and the tooltip):
//   - a repeat "blocks.0-293 ×294" -> "blocks ×294" (the copies' range left out);
//   - a node count " (68)" at the end left out: "blocks.0 (68)" -> "blocks.0";
//   - an input stub's "from X" written "← X";
//   - the leading parts of a dotted name that the enclosing frame already names:
//     "ln_f.weight" inside the frame of scope "model.ln_f" -> "weight".

// [lines, readable] for ``label`` in ``room`` points at font ``size``; ``twoLines``: the box is
// tall enough for two lines; ``scope``: the enclosing frame's scope path ("" at the root);
// ``width(text)``: the drawn width of a text at ``size``.
export function fitLabel(label, room, width, { twoLines = false, scope = "" } = {}) {
  if (width(label) <= room) return [[label], true];
  if (twoLines) {
    const lines = wrap(label, room, width);
    if (lines) return [lines, true];
  }
  for (const short of abbreviations(label, scope)) {
    if (width(short) <= room) return [[short], true];
    const lines = twoLines && wrap(short, room, width);
    if (lines) return [lines, true];
  }
  return [[cut(label, room, width)], false];
}

// The label on two lines broken after a "." or "_" or at a space, both fitting; null if none.
function wrap(label, room, width) {
  for (let i = label.length - 1; i > 0; i--) {
    const c = label[i];
    if (c !== " " && label[i - 1] !== "." && label[i - 1] !== "_") continue;
    const a = label.slice(0, i).trimEnd(), b = label.slice(i).trimStart();
    if (a && b && width(a) <= room && width(b) <= room) return [a, b];
  }
  return null;
}

// The readable abbreviations of a label, shortest last.
export function abbreviations(label, scope = "") {
  const out = [];
  const add = (s) => s && s !== label && !out.includes(s) && out.push(s);
  let s = label.replace(/ \(\d+\)$/, "");
  add(s);
  s = s.replace(/^(.+?)\.\d+-\d+ (×\d+)$/, "$1 $2");
  add(s);
  if (s.startsWith("from ")) add((s = "← " + s.slice(5)));
  const parts = s.split("."), frame = scope ? scope.split(".") : [];
  // drop leading parts that end the frame's path: "ln_f.weight" in "model.ln_f"
  for (let k = parts.length - 1; k > 0; k--) {
    const head = parts.slice(0, k);
    if (head.length <= frame.length && head.every((p, i) => p === frame[frame.length - k + i])) {
      add(parts.slice(k).join("."));
      break;
    }
  }
  return out;
}

// The label cut to the room with "…" (drawn, not counted as labelled).
function cut(label, room, width) {
  let n = label.length - 1;
  while (n > 1 && width(label.slice(0, n) + "…") > room) n -= 1;
  return label.slice(0, n) + "…";
}
