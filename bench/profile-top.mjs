// Summarises V8 CPU profiles (.cpuprofile, as written by `node --cpu-prof`) into the frames that
// take the most time: self time per function, and self time per module (Sigil's own files by path,
// dependencies by package). Used with BENCH_CPU_PROF (see bench/README.md):
//
//   BENCH_CPU_PROF=/tmp/prof npm run bench -- --scenarios f
//   node bench/profile-top.mjs /tmp/prof/*.cpuprofile [--top 25]
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

const { values, positionals } = parseArgs({ allowPositionals: true, options: { top: { type: 'string', default: '25' } } });
if (positionals.length === 0) {
  console.error('usage: node bench/profile-top.mjs FILE.cpuprofile [...] [--top N]');
  process.exit(2);
}
const top = Number(values.top);

/** Where a frame's code lives: Sigil's file under dist/, a dependency's package name, or node's internals. */
function moduleOf(url) {
  if (!url) return '(native or V8)';
  const pkg = url.match(/node_modules\/((?:@[^/]+\/)?[^/]+)/);
  if (pkg) return pkg[1];
  const own = url.match(/\/dist\/(.+)$/);
  if (own) return `sigil: ${own[1]}`;
  if (url.startsWith('node:')) return url;
  return url;
}

for (const file of positionals) {
  const profile = JSON.parse(readFileSync(file, 'utf8'));
  const { nodes, samples, timeDeltas } = profile;
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const selfMicros = new Map();
  samples.forEach((id, i) => selfMicros.set(id, (selfMicros.get(id) ?? 0) + (timeDeltas[i] ?? 0)));
  const total = [...selfMicros.values()].reduce((a, b) => a + b, 0);
  const idle = [...selfMicros].filter(([id]) => byId.get(id).callFrame.functionName === '(idle)').reduce((a, [, t]) => a + t, 0);
  const busy = total - idle;

  const perFrame = new Map();
  const perModule = new Map();
  for (const [id, micros] of selfMicros) {
    const { functionName, url, lineNumber } = byId.get(id).callFrame;
    if (functionName === '(idle)') continue;
    const frame = `${functionName || '(anonymous)'}  ${moduleOf(url)}${url ? `:${lineNumber + 1}` : ''}`;
    perFrame.set(frame, (perFrame.get(frame) ?? 0) + micros);
    const mod = moduleOf(url);
    perModule.set(mod, (perModule.get(mod) ?? 0) + micros);
  }
  // Inclusive time: a sample counts once for every distinct function on its stack.
  const parentOf = new Map();
  for (const n of nodes) for (const child of n.children ?? []) parentOf.set(child, n.id);
  const frameName = (n) => `${n.callFrame.functionName || '(anonymous)'}  ${moduleOf(n.callFrame.url)}${n.callFrame.url ? `:${n.callFrame.lineNumber + 1}` : ''}`;
  const inclusive = new Map();
  for (const [id, micros] of selfMicros) {
    if (byId.get(id).callFrame.functionName === '(idle)') continue;
    const seen = new Set();
    for (let at = id; at !== undefined; at = parentOf.get(at)) seen.add(frameName(byId.get(at)));
    for (const frame of seen) inclusive.set(frame, (inclusive.get(frame) ?? 0) + micros);
  }
  const pct = (t) => `${((100 * t) / busy).toFixed(1).padStart(5)}%`;
  console.log(`\n${file}\n  ${(total / 1e6).toFixed(1)} s sampled, ${((100 * idle) / total).toFixed(1)}% idle; shares below are of the busy time`);
  console.log('  self time by function:');
  for (const [frame, t] of [...perFrame].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`   ${pct(t)}  ${frame}`);
  console.log('  inclusive time by function (own code and what it calls):');
  const boring = /^\((root|program|anonymous)\)/;
  for (const [frame, t] of [...inclusive].filter(([f]) => !boring.test(f)).sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`   ${pct(t)}  ${frame}`);
  console.log('  self time by module:');
  for (const [mod, t] of [...perModule].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`   ${pct(t)}  ${mod}`);
}
