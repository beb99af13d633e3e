import type { Snapshot } from '../catalog/snapshot';
import { isoMs } from './common';

/** User (application-api §7.3) from a stored profile hash: only configured attributes are shown. */
export function userResponse(snap: Snapshot, p: Record<string, string>) {
  const attributes: Record<string, string> = {};
  for (const [field, value] of Object.entries(p)) {
    if (field.startsWith('a:') && snap.userAttributesByKey.has(field.slice(2)))
      attributes[field.slice(2)] = value;
  }
  const tokens = p.dt ? (JSON.parse(p.dt) as unknown) : [];
  return {
    id: p.id ?? '',
    email: p.email ?? null,
    name: p.name ?? null,
    tz: p.tz ?? null,
    deviceTokens: Array.isArray(tokens) ? (tokens as string[]) : [],
    subscribeToEmails: p.sub !== '0',
    attributes,
    control: false,
    created: isoMs(Number(p.created)),
    updated: isoMs(Number(p.updated ?? p.created)),
  };
}

export const NOTIFICATION_TYPES = [
  'achievement_completed',
  'recap',
  'reactivation',
  'streak_reminder',
] as const;

/** NotificationPreferences from a stored profile: the types set so far (`p:<type>` JSON lists). */
export function notificationPreferences(p: Record<string, string>) {
  const out: Record<string, string[]> = {};
  for (const type of NOTIFICATION_TYPES) {
    const raw = p[`p:${type}`];
    if (raw === undefined) continue;
    const list = JSON.parse(raw) as unknown;
    out[type] = Array.isArray(list) ? (list as string[]) : [];
  }
  return out;
}
