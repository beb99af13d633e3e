import type { FC, PropsWithChildren } from 'hono/jsx';

// The fields of the dashboard's forms, each with its label, the value typed and the error that
// refused it: what a form shows again after a failed submit (FormState).

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

/** The choices of a Select: each value with the label it shows. */
export type Options = ReadonlyArray<readonly [value: string, label: string]>;

/** The options of a Select that picks one of `rows` (metrics, achievements, …): its id, shown by name. */
export const optionsOf = (rows: readonly { id: string; name: string }[]): Options =>
  rows.map((r) => [r.id, r.name]);

const MULTI_SELECT_HINT = 'Hold Ctrl (⌘ on a Mac) and click to pick several, or to unpick one.';

export const Select: FC<
  FieldProps & { options: Options; def?: string; multiple?: boolean; blank?: string }
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
