// Summarises V8 CPU profiles (.cpuprofile, as written by `node --cpu-prof`) into the frames that
// take the most time: self time per function, and self time per module (Sigil's own files by path,
// dependencies by package). Used with BENCH_CPU_PROF (see bench/README.md):
//
//   BENCH_CPU_PROF=/tmp/prof npm run bench -- --scenarios f
//   node bench/profile-top.mjs /tmp/prof/*.cpuprofile [--top 25]
import { existsSync, readFileSync } from 'node:fs';
import { SourceMap } from 'node:module';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { top: { type: 'string', default: '25' } },
});
if (positionals.length === 0) {
  console.error('usage: node bench/profile-top.mjs FILE.cpuprofile [...] [--top N]');
  process.exit(2);
}
const top = Number(values.top);

/** Source maps of bundled files (dist/cli/main.js is one file, see scripts/bundle-cli.mjs), by URL. */
const sourceMaps = new Map();
function sourceMapOf(url) {
  if (!sourceMaps.has(url)) {
    const file = url.startsWith('file:') ? fileURLToPath(url) : url;
    sourceMaps.set(
      url,
      existsSync(`${file}.map`) ? new SourceMap(JSON.parse(readFileSync(`${file}.map`, 'utf8'))) : null,
    );
  }
  return sourceMaps.get(url);
}

/**
 * Where a frame's code lives (Sigil's file under src/ or dist/, a dependency's package name, or
 * node's internals) and its 1-based line there. A frame in a bundle is looked up in the bundle's
 * source map first.
 */
function locate({ url, lineNumber, columnNumber }) {
  if (!url) return { module: '(native or V8)', line: undefined };
  const entry = url.startsWith('node:') ? undefined : sourceMapOf(url)?.findEntry(lineNumber, columnNumber);
  const source = entry?.originalSource ?? url;
  const line = (entry?.originalSource ? entry.originalLine : lineNumber) + 1;
  const pkg = source.match(/node_modules\/((?:@[^/]+\/)?[^/]+)/);
  if (pkg) return { module: pkg[1], line };
  const own = source.match(/\/(?:dist|src)\/(.+)$/);
  return { module: own ? `sigil: ${own[1]}` : source, line };
}

for (const file of positionals) {
  const profile = JSON.parse(readFileSync(file, 'utf8'));
  const { nodes, samples, timeDeltas } = profile;
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const selfMicros = new Map();
  for (const [i, id] of samples.entries()) selfMicros.set(id, (selfMicros.get(id) ?? 0) + (timeDeltas[i] ?? 0));
  const total = [...selfMicros.values()].reduce((a, b) => a + b, 0);
  const idle = [...selfMicros]
    .filter(([id]) => byId.get(id).callFrame.functionName === '(idle)')
    .reduce((a, [, t]) => a + t, 0);
  const busy = total - idle;

  const perFrame = new Map();
  const perModule = new Map();
  const located = new Map();
  /** The frame's name and its module, each looked up once per profile node. */
  const describe = (n) => {
    if (!located.has(n.id)) {
      const { module, line } = locate(n.callFrame);
      located.set(n.id, {
        frame: `${n.callFrame.functionName || '(anonymous)'}  ${module}${line === undefined ? '' : `:${line}`}`,
        module,
      });
    }
    return located.get(n.id);
  };
  const frameName = (n) => describe(n).frame;
  for (const [id, micros] of selfMicros) {
    const node = byId.get(id);
    if (node.callFrame.functionName === '(idle)') continue;
    const { frame, module } = describe(node);
    perFrame.set(frame, (perFrame.get(frame) ?? 0) + micros);
    perModule.set(module, (perModule.get(module) ?? 0) + micros);
  }
  // Inclusive time: a sample counts once for every distinct function on its stack.
  const parentOf = new Map();
  for (const n of nodes) for (const child of n.children ?? []) parentOf.set(child, n.id);
  const inclusive = new Map();
  for (const [id, micros] of selfMicros) {
    if (byId.get(id).callFrame.functionName === '(idle)') continue;
    const seen = new Set();
    for (let at = id; at !== undefined; at = parentOf.get(at)) seen.add(frameName(byId.get(at)));
    for (const frame of seen) inclusive.set(frame, (inclusive.get(frame) ?? 0) + micros);
  }
  const pct = (t) => `${((100 * t) / busy).toFixed(1).padStart(5)}%`;
  console.log(
    `\n${file}\n  ${(total / 1e6).toFixed(1)} s sampled, ${((100 * idle) / total).toFixed(1)}% idle; shares below are of the busy time`,
  );
  console.log('  self time by function:');
  for (const [frame, t] of [...perFrame].sort((a, b) => b[1] - a[1]).slice(0, top))
    console.log(`   ${pct(t)}  ${frame}`);
  console.log('  inclusive time by function (own code and what it calls):');
  const boring = /^\((root|program|anonymous)\)/;
  for (const [frame, t] of [...inclusive]
    .filter(([f]) => !boring.test(f))
    .sort((a, b) => b[1] - a[1])
    .slice(0, top))
    console.log(`   ${pct(t)}  ${frame}`);
  console.log('  self time by module:');
  for (const [mod, t] of [...perModule].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`   ${pct(t)}  ${mod}`);
}
