import { formatInTimeZone } from 'date-fns-tz';
import type { Child, FC, PropsWithChildren } from 'hono/jsx';
import { CSRF_FIELD } from './session';

export interface PageCtx {
  csrf: string;
  keyName: string;
  flash?: { kind: 'ok' | 'error' | 'warn'; text: string } | undefined;
}

const NAV: Array<[string, string] | string> = [
  ['/dashboard', 'Overview'],
  ['/dashboard/users', 'Users'],
  'Configure',
  ['/dashboard/metrics', 'Metrics'],
  ['/dashboard/attributes', 'Attributes'],
  ['/dashboard/achievements', 'Achievements'],
  ['/dashboard/streaks', 'Streaks'],
  ['/dashboard/points', 'Points'],
  ['/dashboard/leaderboards', 'Leaderboards'],
  ['/dashboard/config-code', 'As code'],
  ['/dashboard/simulations', 'What-if'],
  'Connect',
  ['/dashboard/webhooks', 'Webhooks'],
  ['/dashboard/import', 'Import events'],
  ['/dashboard/integration', 'Integration'],
];

export const Logo: FC = () => (
  <svg width="26" height="26" viewBox="0 0 26 26" aria-hidden="true">
    <circle cx="13" cy="13" r="12" fill="#2f6f4f" />
    <path d="M8 17c2-6 6-9 10-9-1 4-4 8-10 9z" fill="#e6f2eb" />
    <path d="M8 17l5-5" stroke="#2f6f4f" stroke-width="1.4" />
  </svg>
);

export const Layout: FC<
  PropsWithChildren<{ title: string; active: string; ctx: PageCtx; sub?: Child; actions?: Child }>
> = (props) => (
  <html lang="en">
    <head>
      <meta charset="utf-8" />
      <meta name="viewport" content="width=device-width, initial-scale=1" />
      <title>{`${props.title} · Laurel`}</title>
      <link rel="icon" href="/favicon.ico" type="image/svg+xml" />
      <link rel="stylesheet" href="/dashboard/assets/style.css" />
    </head>
    <body>
      <div class="shell">
        <aside class="side">
          <div class="brand">
            <Logo /> Laurel
          </div>
          <nav class="nav">
            {NAV.map((n) =>
              typeof n === 'string' ? (
                <div class="group">{n}</div>
              ) : (
                <a href={n[0]} class={props.active === n[0] ? 'on' : ''}>
                  {n[1]}
                </a>
              ),
            )}
          </nav>
          <div class="who">Signed in with key “{props.ctx.keyName}”</div>
          <form method="post" action="/dashboard/logout">
            <Csrf token={props.ctx.csrf} />
            <button type="submit">Sign out</button>
          </form>
        </aside>
        <main>
          <div class="head">
            <div>
              <h1>{props.title}</h1>
              {props.sub ? <p class="sub">{props.sub}</p> : null}
            </div>
            {props.actions ?? null}
          </div>
          {props.ctx.flash ? (
            <div
              class={`flash ${props.ctx.flash.kind}`}
              role={props.ctx.flash.kind === 'ok' ? 'status' : 'alert'}
            >
              {props.ctx.flash.text}
            </div>
          ) : null}
          {props.children}
        </main>
      </div>
    </body>
  </html>
);

export const Csrf: FC<{ token: string }> = ({ token }) => (
  <input type="hidden" name={CSRF_FIELD} value={token} />
);

/** A one-button form (status changes, deletes, redeliveries). */
export const PostButton: FC<{
  action: string;
  csrf: string;
  label: string;
  fields?: Record<string, string>;
  kind?: 'danger' | 'ghost';
  confirm?: string;
}> = (p) => (
  <form method="post" action={p.action} class="inline">
    <Csrf token={p.csrf} />
    {Object.entries(p.fields ?? {}).map(([k, v]) => (
      <input type="hidden" name={k} value={v} />
    ))}
    <button type="submit" class={`small ${p.kind ?? 'ghost'}`}>
      {p.label}
    </button>
  </form>
);

export const Status: FC<{ s: string }> = ({ s }) => <span class={`badge ${s}`}>{s}</span>;

export const Empty: FC<PropsWithChildren> = ({ children }) => <div class="empty">{children}</div>;

export const Stat: FC<{ label: string; value: Child; hint?: Child }> = (p) => (
  <div class="stat">
    <div class="l">{p.label}</div>
    <div class="v">{p.value}</div>
    {p.hint ? <div class="h">{p.hint}</div> : null}
  </div>
);

const numberFormat = new Intl.NumberFormat('en-US', { maximumFractionDigits: 6 });
export const fmt = (n: number | null | undefined) =>
  n === null || n === undefined ? '–' : numberFormat.format(n);

/** "2025-03-10 12:00 UTC" from an ISO timestamp or epoch ms. */
export function when(t: string | number | Date | null | undefined): string {
  if (t === null || t === undefined || t === '') return '–';
  const d = new Date(t);
  if (Number.isNaN(d.getTime())) return String(t);
  return formatInTimeZone(d, 'UTC', "yyyy-MM-dd HH:mm 'UTC'");
}

/** "1 freeze", "2 freezes": a count with its noun in the right number (`plural` when not just +s). */
export const count = (n: number, noun: string, plural = `${noun}s`) => `${fmt(n)} ${n === 1 ? noun : plural}`;

/** "Every day", "Every 3 days", "Every lesson": `plural` is the plural noun, e.g. "days" or "Lessons". */
export function every(n: number, plural: string): string {
  const lower = plural.toLowerCase();
  if (n !== 1) return `Every ${fmt(n)} ${lower}`;
  return `Every ${/[^s]s$/.test(lower) ? lower.slice(0, -1) : lower}`;
}
