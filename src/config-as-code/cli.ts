/**
 * `npm run config -- export|plan|apply <file> [--prune] [--no-version]` against a running Laurel
 * (LAUREL_URL, LAUREL_ADMIN_KEY). Prints the plan as a readable diff; exits 1 on any error issue,
 * refusal or failure, so it can gate a CI pipeline.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { parse as parseYaml, stringify as toYaml } from 'yaml';
import { runCli } from '../cli/bootstrap';

interface Change {
  resource: string;
  key: string;
  action: 'create' | 'update' | 'delete' | 'unchanged';
  fields?: Record<string, { before: unknown; after: unknown }>;
  value?: Record<string, unknown>;
  notInDocument?: boolean;
}
interface Issue {
  severity: 'error' | 'warning';
  message: string;
  resource?: string;
  key?: string;
}
interface Plan {
  error?: string;
  version?: string;
  applied?: boolean;
  changes?: Change[];
  issues?: Issue[];
  summary?: { create: number; update: number; delete: number; unchanged: number };
  secrets?: Array<{ url: string; secret: string }>;
}

const USAGE =
  'usage: npm run config -- export [file] [--no-version] | plan <file> [--prune] | apply <file> [--prune]';

const color = process.stdout.isTTY && !process.env.NO_COLOR;
const paint = (code: number, s: string) => (color ? `\x1b[${code}m${s}\x1b[0m` : s);
const show = (v: unknown) => JSON.stringify(v);

/** The plan as a diff: `+` create, `~` update (field: before → after), `-` delete. */
export function renderPlan(plan: Plan, verbose = false): string {
  const lines: string[] = [];
  for (const c of plan.changes ?? []) {
    const name = `${c.resource} ${c.key}`;
    if (c.action === 'create') {
      lines.push(paint(32, `+ ${name}`));
      for (const [f, v] of Object.entries(c.value ?? {})) lines.push(paint(32, `    ${f}: ${show(v)}`));
    } else if (c.action === 'update') {
      lines.push(paint(33, `~ ${name}`));
      for (const [f, v] of Object.entries(c.fields ?? {}))
        lines.push(paint(33, `    ${f}: ${show(v.before)} → ${show(v.after)}`));
    } else if (c.action === 'delete') {
      lines.push(paint(31, `- ${name}`));
    } else if (c.notInDocument) {
      lines.push(`  ${name} (not in the document, kept; --prune deletes it)`);
    } else if (verbose) {
      lines.push(`  ${name}`);
    }
  }
  for (const i of plan.issues ?? []) {
    const where = i.key ? `${i.resource} ${i.key}: ` : '';
    lines.push(
      i.severity === 'error'
        ? paint(31, `error: ${where}${i.message}`)
        : paint(33, `warning: ${where}${i.message}`),
    );
  }
  const s = plan.summary;
  if (s)
    lines.push(
      `${s.create} to create, ${s.update} to update, ${s.delete} to delete, ${s.unchanged} unchanged`,
    );
  return lines.join('\n');
}

async function call(method: string, path: string, body?: { text: string; yaml: boolean }) {
  const base = (process.env.LAUREL_URL ?? 'http://127.0.0.1:3000').replace(/\/+$/, '');
  const key = process.env.LAUREL_ADMIN_KEY;
  if (!key) throw new Error('LAUREL_ADMIN_KEY is not set');
  const res = await fetch(`${base}${path}`, {
    method,
    headers: {
      'X-API-KEY': key,
      ...(body ? { 'Content-Type': body.yaml ? 'application/yaml' : 'application/json' } : {}),
    },
    ...(body ? { body: body.text } : {}),
  });
  const text = await res.text();
  let json: unknown = null;
  try {
    json = JSON.parse(text);
  } catch {}
  return { status: res.status, json: json as Plan & Record<string, unknown>, text };
}

const isYamlFile = (f: string) => /\.ya?ml$/i.test(f);

export async function main(argv: string[]): Promise<number> {
  const flags = new Set(argv.filter((a) => a.startsWith('--')));
  const [command, file] = argv.filter((a) => !a.startsWith('--'));
  for (const f of flags) {
    if (!['--prune', '--no-version', '--verbose'].includes(f)) {
      console.error(`unknown option ${f}\n${USAGE}`);
      return 2;
    }
  }

  if (command === 'export') {
    const res = await call('GET', '/admin/v1/config');
    if (res.status !== 200) {
      console.error(`export failed: ${res.status} ${res.json?.error ?? res.text}`);
      return 1;
    }
    const doc = res.json as Record<string, unknown>;
    if (flags.has('--no-version')) delete doc.version;
    const out = file && isYamlFile(file) ? toYaml(doc) : `${JSON.stringify(doc, null, 2)}\n`;
    if (file) {
      await writeFile(file, out);
      console.error(`exported to ${file}${doc.version ? ` (version ${doc.version})` : ''}`);
    } else process.stdout.write(out);
    return 0;
  }

  if (command !== 'plan' && command !== 'apply') {
    console.error(USAGE);
    return 2;
  }
  if (!file) {
    console.error(USAGE);
    return 2;
  }
  const text = await readFile(file, 'utf8');
  const yaml = isYamlFile(file);
  if (yaml) {
    try {
      parseYaml(text);
    } catch (err) {
      console.error(`${file} is not valid YAML: ${(err as Error).message.split('\n')[0]}`);
      return 1;
    }
  }
  const query = flags.has('--prune') ? '?prune=true' : '';
  // The plan first, always: it shows the diff and every issue (a refused apply names only a few).
  const planned = await call('POST', `/admin/v1/config/plan${query}`, { text, yaml });
  if (planned.json?.changes) console.log(renderPlan(planned.json, flags.has('--verbose')));
  if (planned.status !== 200) {
    console.error(`plan failed (${planned.status}): ${planned.json?.error ?? planned.text}`);
    return 1;
  }
  if (command === 'plan') return (planned.json.issues ?? []).some((i) => i.severity === 'error') ? 1 : 0;
  const res = await call('POST', `/admin/v1/config/apply${query}`, { text, yaml });
  if (res.status !== 200) {
    console.error(`${command} failed (${res.status}): ${res.json?.error ?? res.text}`);
    return 1;
  }
  const plan = res.json;
  for (const s of plan.secrets ?? []) console.log(`signing secret of ${s.url}: ${s.secret} (shown once)`);
  console.log(`applied; configuration version ${plan.version}`);
  return 0;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await runCli({ name: 'config' }, () => main(process.argv.slice(2)));
}
