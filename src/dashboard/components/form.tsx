import type { Child, FC, PropsWithChildren } from 'hono/jsx';
import { Csrf } from '../ui';
import { FormError, type FormState, Input } from './fields';

/** A dashboard form: posts to `action` with the CSRF token, shows the form error, ends with its submit button. */
export const PostForm: FC<
  PropsWithChildren<{ action: string; csrf: string; form: FormState; submit: string; id?: string }>
> = (p) => (
  <form method="post" action={p.action} class="stack" id={p.id}>
    <Csrf token={p.csrf} />
    <FormError form={p.form} />
    {p.children}
    <div>
      <button type="submit">{p.submit}</button>
    </div>
  </form>
);

/** A card that creates one resource: its heading over a PostForm of the fields (children), then `below`. */
export const CreateCard: FC<
  PropsWithChildren<{
    title: string;
    action: string;
    csrf: string;
    form: FormState;
    submit: string;
    id?: string;
    below?: Child;
  }>
> = (p) => (
  <div class="card">
    <h2>{p.title}</h2>
    <PostForm action={p.action} csrf={p.csrf} form={p.form} submit={p.submit} id={p.id}>
      {p.children}
    </PostForm>
    {p.below ?? null}
  </div>
);

/** The name and key fields every keyed resource starts with; `placeholders` are [name, key]. */
export const NameKeyInputs: FC<{
  form: FormState;
  placeholders: readonly [string, string];
  keyHint?: string;
}> = (p) => (
  <>
    <Input form={p.form} name="name" label="Name" placeholder={p.placeholders[0]} />
    <Input form={p.form} name="key" label="Key" placeholder={p.placeholders[1]} hint={p.keyHint} />
  </>
);

/** The textarea of a configuration document (JSON or YAML), with the error that refused it. */
export const DocumentField: FC<{ label: string; rows: number; text: string; error?: string | undefined }> = (
  p,
) => (
  <div class={`field${p.error ? ' bad' : ''}`} data-field="document">
    <label for="f-document">{p.label}</label>
    <textarea id="f-document" name="document" rows={p.rows}>
      {p.text}
    </textarea>
    {p.error ? (
      <div class="err" id="err-document" role="alert">
        {p.error}
      </div>
    ) : null}
  </div>
);
