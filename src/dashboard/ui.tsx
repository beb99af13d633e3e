import { formatInTimeZone } from 'date-fns-tz';
import type { Child, FC, PropsWithChildren } from 'hono/jsx';
import { CSRF_FIELD } from './session';

/** What a form shows after a failed submit: the input as typed, errors per field, and one for the form. */
export interface FormState {
  values: Record<string, string | string[]>;
  errors: Record<string, string>;
  formError?: string | undefined;
}

export const emptyForm = (values: Record<string, string | string[]> = {}): FormState => ({
  values,
  errors: {},
});

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

const fieldValue = (f: FormState | undefined, name: string, def = ''): string => {
  const v = f?.values[name];
  return Array.isArray(v) ? (v[0] ?? def) : (v ?? def);
};
const valuesOf = (f: FormState | undefined, name: string): string[] => {
  const v = f?.values[name];
  return Array.isArray(v) ? v : v ? [v] : [];
};

interface FieldProps {
  form?: FormState | undefined;
  name: string;
  label: string;
  hint?: string;
}

const FieldWrap: FC<PropsWithChildren<FieldProps>> = (p) => {
  const err = p.form?.errors[p.name];
  return (
    <div class={`field${err ? ' bad' : ''}`} data-field={p.name}>
      <label for={`f-${p.name}`}>{p.label}</label>
      {p.children}
      {err ? (
        <div class="err" id={`err-${p.name}`} role="alert">
          {err}
        </div>
      ) : null}
      {p.hint ? <div class="hint">{p.hint}</div> : null}
    </div>
  );
};

export const Input: FC<FieldProps & { type?: string; placeholder?: string; def?: string; step?: string }> = (
  p,
) => (
  <FieldWrap {...p}>
    <input
      id={`f-${p.name}`}
      name={p.name}
      type={p.type ?? 'text'}
      value={fieldValue(p.form, p.name, p.def)}
      placeholder={p.placeholder ?? ''}
      step={p.step}
      aria-invalid={p.form?.errors[p.name] ? 'true' : undefined}
    />
  </FieldWrap>
);

export const TextArea: FC<FieldProps> = (p) => (
  <FieldWrap {...p}>
    <textarea id={`f-${p.name}`} name={p.name} rows={2}>
      {fieldValue(p.form, p.name)}
    </textarea>
  </FieldWrap>
);

/** The options of a Select that picks one of `rows` (metrics, achievements, …): its id, shown by name. */
export const optionsOf = (rows: readonly { id: string; name: string }[]): Array<[string, string]> =>
  rows.map((r) => [r.id, r.name]);

const MULTI_SELECT_HINT = 'Hold Ctrl (⌘ on a Mac) and click to pick several, or to unpick one.';

export const Select: FC<
  FieldProps & { options: Array<[string, string]>; def?: string; multiple?: boolean; blank?: string }
> = (p) => {
  const chosen = p.multiple ? valuesOf(p.form, p.name) : [fieldValue(p.form, p.name, p.def)];
  const hint = p.hint ?? (p.multiple ? MULTI_SELECT_HINT : undefined);
  return (
    <FieldWrap {...p} hint={hint}>
      <select id={`f-${p.name}`} name={p.name} multiple={p.multiple}>
        {p.blank !== undefined ? <option value="">{p.blank}</option> : null}
        {p.options.map(([v, l]) => (
          <option value={v} selected={chosen.includes(v)}>
            {l}
          </option>
        ))}
      </select>
    </FieldWrap>
  );
};

export const Checkbox: FC<{ form?: FormState | undefined; name: string; label: string; def?: boolean }> = (
  p,
) => {
  const on =
    p.form && Object.keys(p.form.values).length ? fieldValue(p.form, p.name) === 'on' : (p.def ?? false);
  return (
    <div class={`field${p.form?.errors[p.name] ? ' bad' : ''}`} data-field={p.name}>
      <label class="check">
        <input type="checkbox" name={p.name} checked={on} /> {p.label}
      </label>
      {p.form?.errors[p.name] ? <div class="err">{p.form.errors[p.name]}</div> : null}
    </div>
  );
};

export const FormError: FC<{ form?: FormState | undefined }> = ({ form }) =>
  form?.formError ? (
    <div class="flash error" role="alert">
      {form.formError}
    </div>
  ) : null;

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
