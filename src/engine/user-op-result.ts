/**
 * What a user op is and what it answers (src/services/user-op.ts runs them): the engine's side of the
 * user script's contract (src/redis/user-script.ts), in a module of its own so that the modules the
 * op calls (leaderboards, streak expiry) can name its result without importing the op.
 */
import type { LeaderboardRow } from '../catalog/snapshot';
import type { LuaAward, LuaStreak, WireLevel } from '../redis/user-script';
import type { Run } from './runs';

/** The user object of a request after validation (null fields already dropped). */
export interface UserInput {
  id: string;
  email?: string | undefined;
  name?: string | undefined;
  tz?: string | undefined;
  deviceTokens?: string[] | undefined;
  subscribeToEmails?: boolean | undefined;
  attributes?: Record<string, string> | undefined;
  /** Notification preferences to merge: type -> channel list (replaces that type's list). */
  preferences?: Record<string, string[]> | undefined;
}

export type UserOp =
  | {
      kind: 'event';
      metricId: string;
      user: UserInput;
      valueMicros: number;
      eventAttributes?: Record<string, string> | undefined;
      idempotencyKey?: string | undefined;
      /** A pre-minted event id (batch items: a resumed item is answered from its reply marker). */
      opId?: string | undefined;
      /** How long the reply marker is kept (ms); default 10 s. */
      markMs?: number | undefined;
      /**
       * The hash holding the reply marker, under the op id, instead of a key of its own (a batch's
       * markers on a single Redis: src/services/batch-events.ts).
       */
      markHash?: string | undefined;
    }
  | { kind: 'complete'; achievementId: string; user: UserInput }
  | { kind: 'upsert'; user: UserInput; mustExist?: boolean }
  /** Background award of time triggers, dated and boosted at the slot time `at`. */
  | { kind: 'grant'; user: UserInput; triggerIds: string[]; at: number }
  /** Backdated completion of an active achievement (nothing happens when ineligible or done). */
  | { kind: 'backdate'; achievementId: string; user: UserInput }
  /** Grants up to `count` freezes, capped at the maximum (result.granted); `slot` = auto-earn slot, granted once. */
  | { kind: 'freeze'; user: UserInput; count: number; slot?: number }
  /** Restores the streak to its best length since `fromIdx` (result.restore). */
  | { kind: 'restore'; user: UserInput; fromIdx: number };

/** The part of a streak its expiry follows from (src/engine/streak-expiry.ts). */
export type StreakState = Pick<LuaStreak, 'length' | 'lastMet' | 'freezes' | 'pauses'>;

/** How an op moved its user on one leaderboard run. */
export interface BoardMove {
  board: LeaderboardRow;
  run: Run;
  group: string;
  groupValues: Array<{ key: string; value: string }>;
  prevRank: number | null;
  rank: number | null;
  prevValue: number | null;
  value: number | null;
  threshold: number;
}

export interface UserOpResult {
  /** Set on an idempotent replay: the original event id. */
  replayOf?: string;
  /** Set when an API completion had already happened: the original completion. */
  already?: { cid: string; at: number };
  /** freeze op: how many freezes were granted. */
  granted?: number;
  /** How the op moved the user on leaderboards (applied by runUserOp after the user script). */
  boardMoves?: BoardMove[];
  /** restore op: the new length, or why nothing changed. */
  restore?: { from?: number; to?: number; issue?: 'none' | 'max' };
  eventId: string;
  totalMicros: number;
  created: boolean;
  seq: number;
  completions: Array<{ id: string; cid: string; at: number }>;
  /** lb / la: the level before and after the op as configured at commit (false: none). */
  points: Array<{
    sys: string;
    total: number;
    added: number;
    awards: LuaAward[];
    lb?: WireLevel | false;
    la?: WireLevel | false;
  }>;
  streak: LuaStreak;
  boards: Array<{ id: string; run: string; value: string }>;
  breakdown: Record<string, string>;
  /** The user's stored profile after the op (not returned for events, which do not need it). */
  profile: Record<string, string>;
  userId: string;
  /** The time context the op was evaluated in. */
  tz: string;
  localDate: string;
  periodIdx: number;
  now: number;
}
