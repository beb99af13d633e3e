import { randomUUID } from 'node:crypto';
import type { Hono } from 'hono';
import type { Deps } from '../../deps';
import { type AcceptedBatch, acceptBatch, type BatchItem, processBatch } from '../../services/batch-events';
import { AppError } from '../../errors';
import { MAX_BATCH_ITEMS, validateBatch } from '../../wire/metric-event-batch';
import { done, pageCtx } from '../forms';
import type { DashEnv } from '../session';
import { Csrf, Layout, type PageCtx } from '../ui';

// Import of a file of metric events (JSON or CSV) through POST /admin/v1/metrics/events' own code:
// the whole file is validated first (its issues are shown and nothing is accepted), then accepted as
// batches of up to 1000 events, processed in the background (resumed by any process if this one
// stops), with a progress page.

const PATH = '/dashboard/import';
/** How long an import's progress page can be looked at. */
const IMPORT_TTL_S = 24 * 3600;
const MAX_ISSUES = 20;

/** A CSV line split on commas, with "quoted" fields ("" for a quote). */
function csvFields(line: string): string[] {
  const out: string[] = [];
  let cur = '';
  let quoted = false;
  for (let i = 0; i < line.length; i++) {
    const ch = line[i]!;
    if (quoted) {
      if (ch === '"' && line[i + 1] === '"') {
        cur += '"';
        i++;
      } else if (ch === '"') quoted = false;
      else cur += ch;
    } else if (ch === '"') quoted = true;
    else if (ch === ',') {
      out.push(cur);
      cur = '';
    } else cur += ch;
  }
  out.push(cur);
  return out;
}

/**
 * CSV with a header row: `key`, `userId`, `value` (required), `idempotencyKey`, `tz`, `name`, `email`
 * (optional), `user.<attribute>` and `event.<attribute>` columns; empty cells are left out.
 */
export function parseCsv(text: string): unknown[] {
  const lines = text.split(/\r?\n/).filter((l) => l.trim() !== '');
  if (lines.length === 0) return [];
  const header = csvFields(lines[0]!).map((h) => h.trim());
  for (const need of ['key', 'userId', 'value']) {
    if (!header.includes(need)) throw new Error(`The CSV header has no "${need}" column`);
  }
  return lines.slice(1).map((line) => {
    const cells = csvFields(line);
    const item: Record<string, any> = { user: {} };
    header.forEach((h, i) => {
      const v = cells[i];
      if (v === undefined || v === '') return;
      if (h === 'key' || h === 'idempotencyKey') item[h] = v;
      else if (h === 'userId') item.user.id = v;
      else if (h === 'value') item.value = /^\s*-?\d+(\.\d+)?([eE][-+]?\d+)?\s*$/.test(v) ? Number(v) : v;
      else if (h === 'tz' || h === 'name' || h === 'email') item.user[h] = v;
      else if (h.startsWith('user.')) {
        item.user.attributes ??= {};
        item.user.attributes[h.slice(5)] = v;
      } else if (h.startsWith('event.')) {
        item.attributes ??= {};
        item.attributes[h.slice(6)] = v;
      }
    });
    return item;
  });
}

/** The events of a file, or why it cannot be read. */
function readFile(name: string, text: string): { items: unknown[] } | { error: string } {
  const trimmed = text.trim();
  try {
    if (name.toLowerCase().endsWith('.csv') || !/^[[{]/.test(trimmed)) return { items: parseCsv(text) };
    const parsed = JSON.parse(trimmed);
    if (!Array.isArray(parsed)) return { error: 'A JSON file must hold an array of events' };
    return { items: parsed };
  } catch (err) {
    return { error: `The file cannot be read: ${(err as Error).message}` };
  }
}

/** Every item's problem (at most MAX_ISSUES), numbered from 1 like the file's events. */
function issuesOf(deps: Deps, items: unknown[]): { issues: string[]; count: number } {
  const snap = deps.catalog.snapshot;
  const issues: string[] = [];
  let count = 0;
  items.forEach((item, i) => {
    try {
      validateBatch(snap, [item]);
    } catch (err) {
      if (!(err instanceof AppError)) throw err;
      count++;
      if (issues.length < MAX_ISSUES) issues.push(`Event ${i + 1}: ${err.message.replace(/^Item 0: /, '')}`);
    }
  });
  return { issues, count };
}

const ImportPage = (p: { ctx: PageCtx; error?: string; issues?: string[]; count?: number }) => (
  <Layout
    title="Import events"
    active={PATH}
    ctx={p.ctx}
    sub="Record a file of metric events, each exactly like POST /v1/metrics/{key}/event (POST /admin/v1/metrics/events)."
  >
    <div class="card">
      <h3>File</h3>
      <form method="post" action={PATH} enctype="multipart/form-data" class="stack">
        <Csrf token={p.ctx.csrf} />
        <div class={`field${p.error || p.issues ? ' bad' : ''}`} data-field="file">
          <label for="f-file">Events (JSON or CSV)</label>
          <input id="f-file" name="file" type="file" accept=".json,.csv,application/json,text/csv" />
          {p.error ? (
            <div class="err" id="err-file" role="alert">
              {p.error}
            </div>
          ) : null}
        </div>
        <button type="submit">Import</button>
      </form>
      <p class="sub">
        JSON: an array of{' '}
        <code>{'{"key", "user": {"id", ...}, "value", "attributes"?, "idempotencyKey"?}'}</code>. CSV: a
        header row with <code>key,userId,value</code> and optionally <code>idempotencyKey</code>,{' '}
        <code>tz</code>, <code>name</code>, <code>email</code>, <code>user.&lt;attribute&gt;</code>,{' '}
        <code>event.&lt;attribute&gt;</code>. The whole file is checked first: if any event is invalid nothing
        is imported. Events with an already used idempotency key are skipped.
      </p>
    </div>
    {p.issues ? (
      <div class="card" role="alert" id="import-issues">
        <h3>
          The file was not imported: {p.count} invalid event{p.count === 1 ? '' : 's'}
        </h3>
        <ul class="issues">
          {p.issues.map((i) => (
            <li class="err">{i}</li>
          ))}
        </ul>
        {(p.count ?? 0) > p.issues.length ? <p>… and {(p.count ?? 0) - p.issues.length} more.</p> : null}
      </div>
    ) : null}
  </Layout>
);

const ProgressPage = (p: { ctx: PageCtx; processed: number; total: number; name: string }) => {
  const finished = p.processed >= p.total;
  return (
    <Layout title="Import events" active={PATH} ctx={p.ctx} sub={`File ${p.name}`}>
      {finished ? null : <meta http-equiv="refresh" content="1" />}
      <div class="card" id="import-progress" data-done={finished ? 'true' : 'false'}>
        <h3>{finished ? 'Imported' : 'Importing…'}</h3>
        <progress max={p.total} value={p.processed} />
        <p>
          <span id="import-count">
            {p.processed} of {p.total}
          </span>{' '}
          events processed
          {finished ? '.' : ' (this page refreshes every second; leaving it does not stop the import).'}
        </p>
        <p>
          <a href={PATH}>Import another file</a>
        </p>
      </div>
    </Layout>
  );
};

export function mountImportPages(app: Hono<DashEnv>, deps: Deps): void {
  const importKey = (id: string) => deps.keys.batches.dashboardImport(id);

  app.get('/import', (c) => c.html(<ImportPage ctx={pageCtx(c)} />));

  app.post('/import', async (c) => {
    const ctx = pageCtx(c);
    const body = await c.req.parseBody();
    const file = body.file;
    if (!(file instanceof File) || file.size === 0) {
      return c.html(<ImportPage ctx={ctx} error="Choose a JSON or CSV file of events" />, 422);
    }
    const read = readFile(file.name, await file.text());
    if ('error' in read) return c.html(<ImportPage ctx={ctx} error={read.error} />, 422);
    if (read.items.length === 0) return c.html(<ImportPage ctx={ctx} error="The file has no events" />, 422);
    const { issues, count } = issuesOf(deps, read.items);
    if (count > 0) return c.html(<ImportPage ctx={ctx} issues={issues} count={count} />, 422);
    const chunks: BatchItem[][] = [];
    for (let i = 0; i < read.items.length; i += MAX_BATCH_ITEMS) {
      chunks.push(validateBatch(deps.catalog.snapshot, read.items.slice(i, i + MAX_BATCH_ITEMS)));
    }
    const accepted: AcceptedBatch[] = [];
    for (const items of chunks) accepted.push(await acceptBatch(deps, items));
    const id = randomUUID();
    await deps.redis
      .multi()
      .hset(importKey(id), {
        batches: JSON.stringify(accepted.map((b) => ({ id: b.id, n: b.items.length }))),
        total: String(read.items.length),
        name: file.name.slice(0, 200),
      })
      .expire(importKey(id), IMPORT_TTL_S)
      .exec();
    // In the background, one batch after the other; a batch this process does not finish is resumed
    // by the batch resumer of any process.
    void (async () => {
      for (const b of accepted) {
        const outcome = await processBatch(deps, b).catch(() => 'interrupted' as const);
        if (outcome !== 'done') break;
      }
    })();
    return done(c, `${PATH}/${id}`, `Accepted ${read.items.length} events.`);
  });

  app.get('/import/:id', async (c) => {
    const rec = await deps.redis.hgetall(importKey(c.req.param('id')));
    if (!rec.batches) throw new AppError('NOT_FOUND', 'This import is unknown or too old');
    const batches = JSON.parse(rec.batches) as Array<{ id: string; n: number }>;
    const pipe = deps.redis.pipeline();
    for (const b of batches) pipe.hget(deps.keys.batches.batch(b.id), 'done');
    const res = (await pipe.exec()) ?? [];
    // A batch whose record is gone is finished (records are removed once processed).
    const processed = batches.reduce((n, b, i) => {
      const d = res[i]?.[1];
      return n + (typeof d === 'string' ? Number(d) : b.n);
    }, 0);
    return c.html(
      <ProgressPage ctx={pageCtx(c)} processed={processed} total={Number(rec.total)} name={rec.name ?? ''} />,
    );
  });
}
