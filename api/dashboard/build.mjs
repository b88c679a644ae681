// Bundles the dashboard (src/) into dist/: app.js (preact + htm + uPlot, minified ES module), app.css and
// index.html. Run by `make dashboard` (part of `make install`) and by the API image's Node stage; nothing is
// fetched at run time, from a CDN or otherwise.
import { copyFile, mkdir, rm } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";

const here = fileURLToPath(new URL(".", import.meta.url));
const dist = `${here}dist`;

await rm(dist, { recursive: true, force: true });
await mkdir(dist, { recursive: true });
await esbuild.build({
  entryPoints: { app: `${here}src/main.js` },
  bundle: true,
  minify: true,
  sourcemap: "linked",
  format: "esm",
  target: ["es2020"],
  outdir: dist,
  legalComments: "linked",
  logLevel: "warning",
});
await copyFile(`${here}src/index.html`, `${dist}/index.html`);
console.log(`dashboard built into ${dist}`);
