// Export of the current view: SVG, PNG and standalone HTML built here, DOT/JSON from the server.

import { api, main, state, status } from "./app.js";
import { canvasPNG, download, toSVG, toStandaloneHTML } from "./exporters.js";

export async function exportAs(format) {
  const base = `${state.run}-graph${state.graph}`;
  if (format === "svg") download(`${base}.svg`, toSVG(main.graph, main.fill), "image/svg+xml");
  else if (format === "png") download(`${base}.png`, await canvasPNG(main.canvas), "image/png");
  else if (format === "html") download(`${base}.html`, toStandaloneHTML(main.graph, state.nodes, `${state.run} / graph ${state.graph}`), "text/html");
  else {
    const url = api.exportUrl(state.run, state.graph, format);
    if (!url) return status(`${format} export needs the server`);
    const res = await fetch(url);
    if (!res.ok) return status(`export failed: ${res.status}`);
    download(`${base}.${format}`, await res.blob(), res.headers.get("content-type"));
  }
  status(`exported ${format}`);
}
