// Builds handler.js (or `--source FILE`: a handler beside it, or a user's JavaScript anywhere with
// its own `--wit` world) into a wasi:http/proxy component with componentize-js, as installed by
// `wasmlab setup js-component` into TOOLS/npm:
//   node build.mjs --tools TOOLS --out FILE.wasm [--source FILE.js] [--wit WORLD.wit --world NAME]
// An output newer than its inputs (the source, its world, this script, componentize-js) is kept.
// componentize-js splices the world's bindings into StarlingMonkey (SpiderMonkey compiled to
// Wasm), then runs Wizer: the engine starts, parses and compiles handler.js and runs its top level
// at build time, and the component ships that memory as its initial image. It has no way to skip
// this step. The WIT of the WASI packages the world names comes from the jco that componentize-js
// installs (its bundled copy of WASI's WIT), relabelled with the WASI version this StarlingMonkey
// was built against.
import { readFile, writeFile, mkdtemp, mkdir, readdir, rename, rm, stat } from "node:fs/promises";
import { join, dirname, resolve } from "node:path";
import { tmpdir } from "node:os";
import { pathToFileURL, fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const WASI = "0.2.10";
const PACKAGES = ["cli", "clocks", "filesystem", "http", "io", "random", "sockets"];

function options(args) {
  const o = {};
  for (let i = 0; i < args.length; i += 2) {
    const [k, v] = [args[i], args[i + 1]];
    if (v === undefined) throw new Error(`${k} needs a value`);
    // Absolute: the build changes directory (see below).
    if (k === "--tools") o.tools = resolve(v);
    else if (k === "--out") o.out = resolve(v);
    else if (k === "--source") o.source = resolve(v);
    else if (k === "--wit") o.wit = resolve(v);
    else if (k === "--world") o.world = v;
    else throw new Error(`unknown option ${k} (give --tools DIR --out FILE [--source FILE] [--wit FILE --world NAME])`);
  }
  if (!o.tools || !o.out) throw new Error("give --tools DIR --out FILE");
  o.source ??= join(here, "handler.js");
  o.wit ??= join(here, "world.wit");
  o.world ??= "handler";
  // Wizer sees the directory componentize-js is run from (when the source is inside it) as `/`:
  // wasmlab's handlers reach ../js/routes.mjs from peers/, a user's source has its own directory.
  o.root = dirname(o.source) === here ? dirname(here) : dirname(o.source);
  return o;
}

/** Whether `out` exists and is newer than every input. */
async function upToDate(out, inputs) {
  const mtime = async (f) => (await stat(f)).mtimeMs;
  try {
    const built = await mtime(out);
    for (const f of inputs) if ((await mtime(f)) > built) return false;
    return true;
  } catch {
    return false;
  }
}

async function main() {
  const o = options(process.argv.slice(2));
  const modules = join(o.tools, "npm", "node_modules", "@bytecodealliance");
  const cjs = join(modules, "componentize-js");
  const inputs = [o.source, o.wit, ...["build.mjs", "../js/routes.mjs"].map((f) => join(here, f))];
  inputs.push(join(cjs, "package.json"));
  if (await upToDate(o.out, inputs)) {
    console.log(`${o.out} is up to date`);
    return;
  }
  await mkdir(dirname(o.out), { recursive: true });
  const { componentize, version } = await import(pathToFileURL(join(cjs, "src", "componentize.js")));
  const engine = await readFile(join(cjs, "lib", "starlingmonkey_embedding.wasm"));
  if (!engine.includes(`wasi:http/types@${WASI}`)) {
    throw new Error(`this componentize-js (${version}) embeds a StarlingMonkey not built against WASI ${WASI}: the sources and worlds name ${WASI}`);
  }
  // jco's copy of WASI's WIT: the newest 0.2.x that has every package the world needs.
  const builtin = join(modules, "jco", "lib", "wit", "builtin");
  const versions = (await readdir(builtin)).filter((v) => /^0\.2\.\d+$/.test(v));
  const complete = [];
  for (const v of versions) {
    const have = await readdir(join(builtin, v));
    if (PACKAGES.every((p) => have.includes(`wasi-${p}`))) complete.push(v);
  }
  complete.sort((a, b) => Number(a.split(".")[2]) - Number(b.split(".")[2]));
  const from = complete.pop();
  if (!from) throw new Error(`no complete copy of WASI 0.2's WIT under ${builtin}`);
  const work = await mkdtemp(join(tmpdir(), "wasmlab-js-component-"));
  try {
    const wit = join(work, "wit");
    for (const p of PACKAGES) {
      const text = await readFile(join(builtin, from, `wasi-${p}`, "package.wit"), "utf8");
      await mkdir(join(wit, "deps", p), { recursive: true });
      await writeFile(join(wit, "deps", p, "package.wit"), text.replaceAll(`@${from}`, `@${WASI}`));
    }
    await writeFile(join(wit, "world.wit"), await readFile(o.wit));
    process.chdir(o.root);
    const started = Date.now();
    const { component } = await componentize({
      sourcePath: o.source,
      witPath: wit,
      worldName: o.world,
    });
    // Written beside and renamed into place: two runs (two tests at once) may build it together,
    // and a reader of `out` must never see half a component.
    const partial = `${o.out}.${process.pid}.partial`;
    await writeFile(partial, component);
    await rename(partial, o.out);
    const secs = ((Date.now() - started) / 1000).toFixed(1);
    console.log(`componentize-js ${version}: ${o.out}, ${component.length} bytes, built in ${secs} s (WASI WIT from jco's ${from}, as ${WASI}); SpiderMonkey pre-initialised with ${o.source} by Wizer`);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

main().catch((e) => {
  console.error(`build.mjs: error: ${e.message}`);
  process.exit(1);
});
