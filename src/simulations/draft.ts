/**
 * The configuration a draft document describes, as a Snapshot, without changing the live one: the
 * document is planned through configuration as code (src/config-as-code/apply.ts) inside a Postgres
 * transaction that always rolls back, and the snapshot is loaded from that transaction just before the
 * rollback. The validation is therefore exactly the one apply would do; nothing is committed, no
 * change is published, no backdating starts (it waits for a commit that never comes).
 */
import type { Snapshot } from '../catalog/snapshot';
import { runConfig } from '../config-as-code/apply';
import type { ConfigDocument } from '../config-as-code/document';
import type { Deps } from '../deps';
import { unprocessable } from '../errors';

export interface DraftSnapshot {
  snapshot: Snapshot;
  /** Warnings of the plan (errors refuse the draft). */
  warnings: string[];
  /** Items the draft creates, updates or deletes. */
  changes: { create: number; update: number; delete: number };
}

const EPOCH = new Date(0);

/** Builds the draft's snapshot (422 when the document has item errors). Changes nothing. */
export async function draftSnapshot(deps: Deps, doc: ConfigDocument, prune: boolean): Promise<DraftSnapshot> {
  let draft: Snapshot | null = null;
  // The draft is compared with the configuration as it is now, whatever version it was exported at.
  const { result } = await runConfig(
    deps,
    { ...doc, version: undefined },
    {
      prune,
      apply: false,
      inspect: (snap) => {
        draft = snap;
      },
    },
  );
  const errors = result.issues.filter((i) => i.severity === 'error');
  if (errors.length || !draft) {
    const shown = errors
      .slice(0, 5)
      .map((i) => (i.key ? `${i.resource} ${i.key}: ${i.message}` : i.message))
      .join('; ');
    throw unprocessable(`The draft configuration has errors: ${shown || 'it could not be planned'}`);
  }
  const snapshot = asIfAlwaysActive(draft, deps.catalog.snapshot);
  return {
    snapshot,
    warnings: result.issues.filter((i) => i.severity === 'warning').map((i) => i.message),
    changes: {
      create: result.summary.create,
      update: result.summary.update,
      delete: result.summary.delete,
    },
  };
}

/**
 * A trigger the draft creates or activates would be anchored at the moment of the (rolled back)
 * transaction, after every recorded event, and so award nothing in a replay. In a what-if it counts
 * from the start of the history instead: its activation anchor is moved to the epoch. Triggers the
 * draft leaves active keep their live anchor, so the unchanged rules replay exactly as live.
 */
function asIfAlwaysActive(draft: Snapshot, current: Snapshot): Snapshot {
  for (const sys of draft.systems) {
    sys.triggers = sys.triggers.map((t) => {
      const live = current.triggersById.get(t.id);
      const same =
        live && live.status === 'active' && live.activatedAt?.getTime() === t.activatedAt?.getTime();
      if (same || t.status !== 'active') return t;
      const moved = { ...t, activatedAt: EPOCH };
      draft.triggersById.set(t.id, moved);
      return moved;
    });
  }
  return draft;
}
