// Guards postgres.js's nextWrite against a socket closed before its scheduled write runs.
// Upstream bug (porsager/postgres #1066, #1154, #1208; fix proposed in #1168/#1176, not released in
// 3.4.9): the write is scheduled with setImmediate, the connection closes first, and the callback
// throws `TypeError: Cannot read properties of null (reading 'write')` outside any try/catch, which
// kills the process whenever Postgres goes away. The close path has already rejected the queries of
// that connection, so the buffered bytes can be dropped. Idempotent; run on every install.
import { readFileSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';

const MARK = '/* laurel: guard closed socket */';
const ORIGINAL = 'function nextWrite(fn) {\n    const x = socket.write(chunk, fn)';
const PATCHED = `function nextWrite(fn) {\n    ${MARK}\n    if (socket === null) {\n      nextWriteTimer !== null && clearImmediate(nextWriteTimer)\n      chunk = nextWriteTimer = null\n      return false\n    }\n    const x = socket.write(chunk, fn)`;

// npm runs install scripts from the package root.
const root = join(process.cwd(), 'node_modules', 'postgres');
if (!existsSync(join(root, 'package.json'))) process.exit(0); // not installed: nothing to patch
let patched = 0;
for (const rel of ['src/connection.js', 'cjs/src/connection.js', 'cf/src/connection.js']) {
  const file = join(root, rel);
  if (!existsSync(file)) continue;
  const src = readFileSync(file, 'utf8');
  if (src.includes(MARK)) continue;
  if (!src.includes(ORIGINAL)) {
    console.error(`patch-postgres: ${rel} does not look like postgres 3.4.x; not patched`);
    process.exit(1);
  }
  writeFileSync(file, src.replace(ORIGINAL, PATCHED));
  patched++;
}
if (patched) console.log(`patch-postgres: guarded nextWrite in ${patched} file(s)`);
