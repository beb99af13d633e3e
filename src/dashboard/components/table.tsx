import type { Child, FC, PropsWithChildren } from 'hono/jsx';
import { Empty, PostButton } from '../ui';

/** A column heading: its text, or `numeric(text)` for a right-aligned number column. */
export type Column = string | { label: string; num: true };

export const numeric = (label: string): Column => ({ label, num: true });

/**
 * A table of `rows`, one `<tr>` each from `row`. With `empty`, no rows show that message instead
 * of an empty table.
 */
export function Table<T>(p: {
  cols: readonly Column[];
  rows: readonly T[];
  row: (r: T, i: number) => Child;
  empty?: Child;
}) {
  if (!p.rows.length && p.empty !== undefined) return <Empty>{p.empty}</Empty>;
  return (
    <table>
      <thead>
        <tr>{p.cols.map((c) => (typeof c === 'string' ? <th>{c}</th> : <th class="num">{c.label}</th>))}</tr>
      </thead>
      <tbody>{p.rows.map((r, i) => p.row(r, i))}</tbody>
    </table>
  );
}

/** The red one-button form that deletes (or revokes) a row. */
export const DeleteButton: FC<{ action: string; csrf: string; label?: string }> = (p) => (
  <PostButton action={p.action} csrf={p.csrf} label={p.label ?? 'Delete'} kind="danger" />
);

/** Per status, the label of the button that moves a row on and the status it moves it to. */
type Moves = Readonly<Record<string, readonly [label: string, next: string]>>;

/**
 * The button that moves a row on from its `status`: `moves[status]` is the button's label and the
 * status it posts to `action`; nothing when that status has no move.
 */
export const StatusButton: FC<{
  action: string;
  csrf: string;
  status: string;
  moves: Moves;
}> = (p) => {
  const move = p.moves[p.status];
  return move ? (
    <PostButton action={p.action} csrf={p.csrf} label={move[0]} fields={{ status: move[1] }} />
  ) : null;
};

/** A row's first cell: its name (a link when there is `href`) over its key. */
export const NameCell: FC<{ name: string; code: string; href?: string }> = (p) => (
  <td>
    {p.href ? (
      <a href={p.href}>
        <strong>{p.name}</strong>
      </a>
    ) : (
      <strong>{p.name}</strong>
    )}
    <div class="sub">
      <code>{p.code}</code>
    </div>
  </td>
);

/**
 * A row's last cell: with `moves`, the StatusButton that posts to `${href}/status`; then any other
 * buttons; last the one that deletes the row (POST `${href}/delete`).
 */
export const RowActions: FC<
  PropsWithChildren<{ href: string; csrf: string; status?: string; moves?: Moves }>
> = (p) => (
  <td>
    <div class="actions">
      {p.moves ? (
        <StatusButton action={`${p.href}/status`} csrf={p.csrf} status={p.status ?? ''} moves={p.moves} />
      ) : null}
      {p.children}
      <DeleteButton action={`${p.href}/delete`} csrf={p.csrf} />
    </div>
  </td>
);
