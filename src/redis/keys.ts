/**
 * Every Redis key Laurel uses is built here. User state is hash-tagged by user shard so that one
 * user's keys (and, on a Cluster, the shard's outbox) share a Cluster slot; a leaderboard's keys share
 * the board's slot.
 */

/** FNV-1a 32-bit over UTF-16 code units: stable across processes and versions. */
export function shardOf(userId: string, shards: number): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < userId.length; i++) {
    h ^= userId.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h % shards;
}

/**
 * The keys of one user, all in the user's shard slot (a class, not an object of closures: one is built
 * per request).
 */
export class UserKeys {
  /** The user's state: profile fields and every other part under its prefix (src/redis/user-hash.ts). */
  readonly hash: string;
  /** Streak period history: the newest 100 periods of the streak's epoch (lua/lib/streak.lua). */
  readonly streakHistory: string;
  /** "<metricId>|<key>" -> event id, kept forever (IDEMPOTENCY_WINDOW_DAYS=0). */
  readonly idempotency: string;

  constructor(
    readonly shard: number,
    base: string,
    /** The outbox stream the user's records go to (Keys.outbox). */
    readonly outbox: string,
    /** Every user of the shard (score = creation ms), written by the user script when it creates one. */
    readonly users: string,
  ) {
    this.hash = base;
    this.streakHistory = `${base}:shist`;
    this.idempotency = `${base}:idem`;
  }

  /**
   * "<metricId>|<key>" -> "<event id>|<first use ms>" of keys first used in window bucket `b`
   * (floor(ms / window)); each bucket key expires when its last entry leaves the window.
   */
  idemBucket(bucket: number): string {
    return `${this.hash}:idem:${bucket}`;
  }

  /** Recent awards of one system (JSON, newest first, capped). */
  awards(systemId: string): string {
    return `${this.hash}:awards:${systemId}`;
  }

  /** The reply of one committed op, kept briefly so a retried call can be answered (not redone). */
  op(opId: string): string {
    return `${this.hash}:op:${opId}`;
  }

  /**
   * The keys of the layout before the user hash (one hash per part), read only by the layout
   * migration (src/redis/layout.ts) and unlinked by rebuild.
   */
  legacy() {
    const base = this.hash;
    return {
      metrics: `${base}:metrics`,
      counters: `${base}:counters`,
      achievements: `${base}:achievements`,
      points: `${base}:points`,
      streak: `${base}:streak`,
      boards: `${base}:boards`,
      applied: `${base}:applied`,
    };
  }
}

/** What the key layout depends on besides the prefix and the shard count. */
export interface KeyLayout {
  /** A Redis Cluster: a user's outbox stream must share the user's slot. */
  cluster: boolean;
}

export class Keys {
  /**
   * Every outbox stream, the history writer's input: on a Cluster one per user shard, in the shard's
   * slot (a user's script writes its records beside its state); on a single Redis one for every user,
   * so that a pass of the writer reads, acknowledges and deletes in one stream what it would otherwise
   * gather from hundreds (each holding one or two records at a steady rate).
   */
  readonly outboxes: readonly string[];

  constructor(
    readonly prefix: string,
    readonly shards: number,
    readonly layout: KeyLayout,
  ) {
    this.outboxes = layout.cluster
      ? Array.from({ length: shards }, (_, shard) => this.shardOutbox(shard))
      : [`${prefix}:outbox`];
  }

  shardTag(shard: number): string {
    return `${this.prefix}:{u${shard}}`;
  }

  /** The keys of one user, all in the user's shard slot. */
  user(userId: string): UserKeys {
    const shard = shardOf(userId, this.shards);
    return new UserKeys(
      shard,
      `${this.shardTag(shard)}:user:${userId}`,
      this.outbox(shard),
      this.shardUsers(shard),
    );
  }

  /**
   * Outbox entries whose record the history writer could not read, set aside with the stream and id
   * they had and the error (its newest 1,000: history-writer.ts UNREADABLE_KEPT).
   */
  get outboxUnreadable(): string {
    return `${this.prefix}:outbox-unreadable`;
  }

  /** The outbox stream of a user shard's records (Keys.outboxes). */
  outbox(shard: number): string {
    return this.layout.cluster ? this.shardOutbox(shard) : this.outboxes[0]!;
  }

  /** A shard's own stream: a Cluster's outbox, and a single Redis's before one stream served every user. */
  private shardOutbox(shard: number): string {
    return `${this.shardTag(shard)}:outbox`;
  }

  /**
   * On a single Redis, the per-shard outbox streams of the earlier layout (none on a Cluster): the
   * history writer drains any that still exist, or that a process of an older version writes to during
   * an upgrade, and removes each once it is empty.
   */
  legacyOutboxes(): string[] {
    if (this.layout.cluster) return [];
    return Array.from({ length: this.shards }, (_, shard) => this.shardOutbox(shard));
  }

  /** Sorted set of the users of one shard (score = creation ms): batch iteration over all users. */
  shardUsers(shard: number): string {
    return `${this.shardTag(shard)}:users`;
  }

  private readonly boards = new Map<string, ReturnType<Keys['buildBoard']>>();

  /** Keys of one leaderboard, all in the board's slot (built once per board). */
  board(boardId: string) {
    let keys = this.boards.get(boardId);
    if (!keys) {
      keys = this.buildBoard(boardId);
      this.boards.set(boardId, keys);
    }
    return keys;
  }

  private buildBoard(boardId: string) {
    const base = `${this.prefix}:{lb:${boardId}}`;
    return {
      /** Sorted set of one run and breakdown group. */
      ranking: (runStart: string, group: string) => `${base}:run:${runStart}:g:${group}`,
      /**
       * Streak boards: the ranking's members by when their streak breaks without activity (score =
       * expires, +inf for never), so a move drops the lapsed ones without reading the whole ranking.
       */
      expiries: (runStart: string, group: string) => `${base}:run:${runStart}:x:${group}`,
      /** Member metadata of one run: userId -> "value|changedAt|group|seq|expires". */
      members: (runStart: string) => `${base}:run:${runStart}:members`,
      /** Ranking version: changes with every ranking write of the board (validates cached reads). */
      version: `${base}:ver`,
      /** Stream of rank/value changes (all runs): users' rank history and leaderboard webhooks. */
      changes: `${base}:changes`,
    };
  }

  /**
   * Indexes that span users, in one slot of their own (so they pipeline on Cluster), maintained by the
   * history writer from the outbox (lua/lib/globals.lua). Built once: events read them every time.
   */
  get global() {
    this.globalKeys ??= this.buildGlobal();
    return this.globalKeys;
  }

  private globalKeys: ReturnType<Keys['buildGlobal']> | undefined;

  private buildGlobal() {
    return {
      userCount: `${this.prefix}:{global}:users`,
      /** The Redis layout version this data is in (src/redis/layout.ts). */
      layout: `${this.prefix}:{global}:layout`,
      achievementCompletions: `${this.prefix}:{global}:achievement-completions`,
      /** Sorted set userId -> points total of one system (histograms, level summaries). */
      pointsTotals: (systemId: string) => `${this.prefix}:{global}:points:${systemId}`,
      /** Sorted set userId -> current streak length (> 0 only). */
      streakActive: `${this.prefix}:{global}:streak:active`,
      /** Hash userId -> "<reachedAtMs>|<expiresAtMs>" of the current streak length (ties, lazy breaks). */
      streakActiveMeta: `${this.prefix}:{global}:streak:active-meta`,
      /** Sorted set userId -> longest streak ever; hash userId -> when it was reached. */
      streakLongest: `${this.prefix}:{global}:streak:longest`,
      streakLongestAt: `${this.prefix}:{global}:streak:longest-at`,
      /**
       * Hash: the seq of the newest record applied to a user's current streak ("<userId>") and to each
       * of the user's points totals ("<userId>\0<systemId>"), from the user's second op on (lib/globals.lua).
       */
      appliedSeq: `${this.prefix}:{global}:applied-seq`,
    };
  }

  /** Accepted event batches (POST /admin/v1/metrics/events), in one slot of their own. */
  get batches() {
    this.batchKeys ??= this.buildBatches();
    return this.batchKeys;
  }

  private batchKeys: ReturnType<Keys['buildBatches']> | undefined;

  private buildBatches() {
    return {
      /** Sorted set batchId -> lease expiry (ms) of every batch not yet fully processed. */
      pending: `${this.prefix}:{batch}:pending`,
      /** Hash of one batch: items (JSON), n, done (items before it are committed), owner (token). */
      batch: (batchId: string) => `${this.prefix}:{batch}:b:${batchId}`,
      /**
       * Hash of one batch's reply markers on a single Redis (op id -> reply; lua/applyUserOp.lua
       * input.mf): the running chunk's, removed when its progress is recorded (lua/batchProgress.lua).
       */
      marks: (batchId: string) => `${this.prefix}:{batch}:m:${batchId}`,
      /** Hash of one dashboard import (its batches, for the progress page); expires after a day. */
      dashboardImport: (importId: string) => `${this.prefix}:{batch}:import:${importId}`,
    };
  }

  /** Token bucket of one API key (its own slot). */
  rateLimit(apiKeyId: string): string {
    return `${this.prefix}:{rl:${apiKeyId}}:bucket`;
  }

  /**
   * Due work of the background scheduler, indexed by due time, in one slot of its own (the claim
   * script touches one key at a time).
   */
  get sched() {
    const base = `${this.prefix}:{sched}`;
    return {
      /** Sorted set "<triggerId>|<activatedAtMs>|<userId>" -> next slot (ms) of a time trigger. */
      timeTriggers: `${base}:tt`,
      /** Sorted set userId -> when the user's streak next needs a rollover (ms). */
      streaks: `${base}:streak`,
      /** Sorted set "<autoEarnEnabledAtMs>|<userId>" -> next freeze auto-earn slot (ms). */
      freezes: `${base}:freeze`,
      /** Sorted set "<boardId>|<runStart>|<group>" -> when a coalesced leaderboard.changed is due (ms). */
      boardChanged: `${base}:lb-changed`,
      /** Hash of lifecycle transitions and one-off enqueue scans already done (marker -> value). */
      done: `${base}:done`,
      /** Set "<epoch>|<userId>" of users whose streak recompute waits for the history writer. */
      streakRecompute: `${base}:streak-recompute`,
    };
  }

  get configChannel(): string {
    return `${this.prefix}:config-changed`;
  }
}
