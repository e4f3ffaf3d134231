// wasmlab runner for the WASI of a JavaScript runtime: Node (V8), and Bun (JavaScriptCore) unchanged.
// Protocol: docs/engines.md.
//
//   node engines/node/run.mjs --version
//   node engines/node/run.mjs [--config default] --phases FILE MODULE.wasm [ARG...]
//   bun  engines/node/run.mjs ...   (same)
//
// Runs a WASI preview 1 command module to completion and writes its phase times (compile, instantiate,
// execute) as JSON to FILE.

import * as fs from 'node:fs';
import * as path from 'node:path';

const NAME = 'wasmlab-engine-node';
const USAGE =
  'usage: run.mjs --version\n' +
  '       run.mjs [--config default] --phases FILE MODULE.wasm [ARG...]\n';
const EXIT_USAGE = 2; // bad command line, unknown --config
const EXIT_PROGRAM = 70; // the program failed while running: a trap, an error thrown from its WASI calls
const EXIT_RUNNER = 71; // the runner failed: reading, compiling, instantiating, writing the phases
const CONFIGS = ['default'];

const isBun = typeof process.versions.bun === 'string';

function fail(code, message) {
  process.stderr.write(`${NAME}: ${message}\n`);
  process.exit(code);
}

function usageError(message) {
  process.stderr.write(USAGE);
  fail(EXIT_USAGE, message);
}

// --- command line ---
let config = 'default';
let phasesFile = null;
const argv = process.argv.slice(2);
let i = 0;
for (; i < argv.length; i++) {
  const arg = argv[i];
  if (arg === '--') {
    i++;
    break;
  }
  if (!arg.startsWith('-') || arg === '-') break;
  const eq = arg.indexOf('=');
  const name = eq >= 0 ? arg.slice(0, eq) : arg;
  let value = eq >= 0 ? arg.slice(eq + 1) : null;
  if (name === '--version') {
    // "node v20.20.2" or "bun 1.x.y"
    process.stdout.write(isBun ? `bun ${process.versions.bun}\n` : `node ${process.version}\n`);
    process.exit(0);
  } else if (name === '-h' || name === '--help') {
    process.stdout.write(USAGE);
    process.exit(0);
  } else if (name === '--config' || name === '--phases') {
    if (value === null) {
      if (i + 1 >= argv.length) usageError(`${name} needs a value`);
      value = argv[++i];
    }
    if (name === '--config') config = value;
    else phasesFile = value;
  } else {
    usageError(`unknown option ${JSON.stringify(arg)}`);
  }
}
if (!CONFIGS.includes(config)) {
  fail(EXIT_USAGE, `unknown --config ${JSON.stringify(config)} (known: ${CONFIGS.join(', ')})`);
}
if (i >= argv.length) usageError('no module given');
if (phasesFile === null) usageError('--phases FILE is required');
const modulePath = argv[i];
const programArgs = [path.basename(modulePath), ...argv.slice(i + 1)];

// --- quiet node:wasi ---
// Node 20 emits "ExperimentalWarning: WASI is an experimental feature" when node:wasi is loaded. Drop exactly
// that warning, so that stderr holds only the program's own output (other warnings still reach Node's
// default handler; `node --no-warnings` is not needed). node:wasi is imported dynamically so that the filter
// is in place before it loads.
const warningListeners = process.listeners('warning');
process.removeAllListeners('warning');
process.on('warning', (warning) => {
  if (warning && warning.name === 'ExperimentalWarning' && /\bWASI\b/.test(warning.message)) return;
  for (const listener of warningListeners) listener.call(process, warning);
});
const { WASI } = await import('node:wasi');

// --- run ---
const now = process.hrtime.bigint; // monotonic, nanoseconds

// Bun's node:wasi (a JavaScript implementation) ignores `returnOnExit` and the stdio options: its proc_exit
// calls `bindings.exit`, by default the process's exit, which would end the runner before the phases are
// written; and fd 0 reads the process's stdin. There the runner passes its own bindings, whose exit throws
// ProcExit, and an empty stdin. Node's WASI returns the exit code from start() and takes a stdin fd.
class ProcExit {
  constructor(code) {
    this.code = code;
  }
}

function wasiOptions() {
  const options = {
    version: 'preview1',
    args: programArgs,
    env: {},
    preopens: { '.': process.cwd() },
    returnOnExit: true,
  };
  if (isBun) {
    options.bindings = {
      fs,
      path,
      hrtime: () => process.hrtime.bigint(),
      exit: (code) => {
        throw new ProcExit(code);
      },
      kill: (signal) => process.kill(process.pid, signal),
    };
    options.getStdin = () => Buffer.alloc(0); // stdin empty
  } else {
    options.stdin = fs.openSync('/dev/null', 'r'); // stdin empty
    options.stdout = 1;
    options.stderr = 2;
  }
  return options;
}

let bytes;
try {
  bytes = fs.readFileSync(modulePath); // not timed
} catch (e) {
  fail(EXIT_RUNNER, e.message);
}

let phase = 'compile';
try {
  // compile: validation and compilation, from the bytes in memory to a WebAssembly.Module.
  const t0 = now();
  const module = await WebAssembly.compile(bytes);
  const t1 = now();

  // instantiate: the WASI context, linking, instantiation.
  phase = 'instantiate';
  const wasi = new WASI(wasiOptions());
  const instance = await WebAssembly.instantiate(module, { wasi_snapshot_preview1: wasi.wasiImport });
  const t2 = now();
  if (typeof instance.exports._start !== 'function') {
    fail(EXIT_RUNNER, 'module has no exported function _start');
  }

  // execute: the call of _start (wasi.start) until it returns or the program exits.
  phase = 'execute';
  const t3 = now();
  let code = 0;
  try {
    const result = wasi.start(instance); // Node: the proc_exit code (returnOnExit), else undefined or 0
    if (typeof result === 'number') code = result;
  } catch (e) {
    if (!(e instanceof ProcExit)) throw e;
    code = e.code; // Bun: proc_exit
  }
  const t4 = now();

  phase = 'write phases';
  fs.writeFileSync(
    phasesFile,
    `{"compile_ns": ${t1 - t0}, "instantiate_ns": ${t2 - t1}, "execute_ns": ${t4 - t3}}\n`,
  );
  // The low 8 bits, as the kernel keeps of a native program's status.
  process.exitCode = code & 0xff;
} catch (e) {
  // As in every runner: a failure while the program runs is the program's (70), one before (a
  // trap in a start function included) or after it the runner's (71).
  const what = e instanceof WebAssembly.RuntimeError ? 'trap' : phase;
  const code = phase === 'execute' ? EXIT_PROGRAM : EXIT_RUNNER;
  fail(code, `${what}: ${e && e.stack ? e.stack : e}`);
}
