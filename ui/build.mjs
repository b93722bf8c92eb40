// Builds dist/: app.js (TypeScript and uPlot, bundled and minified), app.css (uPlot's CSS and the
// page's) and the two HTML pages copied as they are. The same sources give the same bytes.
import { build } from "esbuild";
import { copyFileSync, mkdirSync, readFileSync } from "node:fs";

// uPlot's notice (its MIT license asks for it in copies; its own comment is not kept by the minifier).
const uplot = JSON.parse(readFileSync("node_modules/uplot/package.json", "utf8")).version;
const banner = { js: `/*! uPlot v${uplot} (c) Leon Sorokin, MIT License, https://github.com/leeoniya/uPlot */` };
const common = { bundle: true, minify: true, logLevel: "warning", charset: "utf8", legalComments: "eof" };

mkdirSync("dist", { recursive: true });
await build({ ...common, entryPoints: ["src/main.ts"], outfile: "dist/app.js", format: "iife", target: "es2020", banner });
await build({ ...common, entryPoints: ["src/app.css"], outfile: "dist/app.css" });
for (const page of ["index.html", "login.html"]) copyFileSync(`src/${page}`, `dist/${page}`);
