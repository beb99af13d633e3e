import { randomBytes } from 'node:crypto';
import net from 'node:net';
import postgres from 'postgres';
import type { TestProject } from 'vitest/node';
import { runMigrations } from '../../src/db/migrate';

declare module 'vitest' {
  export interface ProvidedContext {
    services: {
      redisUrl: string;
      /** Set when the suite runs against a Redis Cluster (REDIS_CLUSTER_NODES). */
      clusterNodes: string | undefined;
      databaseUrl: string;
      templateDb: string;
      runId: string;
    };
  }
}

function reachable(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect({ host, port, timeout: 500 });
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
    s.once('timeout', () => {
      s.destroy();
      resolve(false);
    });
  });
}

const stops: Array<() => Promise<unknown>> = [];

/**
 * Finds Redis and Postgres: REDIS_URL / DATABASE_URL when set, else the local services when they
 * answer, else containers (for machines with Docker). Migrates one template database per run;
 * each test file clones it.
 */
export async function setup(project: TestProject) {
  let redisUrl = process.env.REDIS_URL;
  let databaseUrl = process.env.DATABASE_URL;
  if (!redisUrl) {
    if (await reachable('127.0.0.1', 6379)) redisUrl = 'redis://127.0.0.1:6379';
    else {
      const { RedisContainer } = await import('@testcontainers/redis');
      const c = await new RedisContainer('redis:7').start();
      stops.push(() => c.stop());
      redisUrl = c.getConnectionUrl();
    }
  }
  if (!databaseUrl) {
    if (await reachable('127.0.0.1', 5432)) databaseUrl = 'postgres://postgres@127.0.0.1:5432/postgres';
    else {
      const { PostgreSqlContainer } = await import('@testcontainers/postgresql');
      const c = await new PostgreSqlContainer('postgres:15').start();
      stops.push(() => c.stop());
      databaseUrl = c.getConnectionUri();
    }
  }
  const runId = `${Date.now().toString(36)}${randomBytes(3).toString('hex')}`;
  const templateDb = `laurel_t_${runId}_tpl`;
  const tplUrl = new URL(databaseUrl);
  tplUrl.pathname = `/${templateDb}`;
  await runMigrations(tplUrl.toString());
  const clusterNodes = process.env.REDIS_CLUSTER_NODES || undefined;
  project.provide('services', { redisUrl, clusterNodes, databaseUrl, templateDb, runId });

  return async () => {
    const admin = postgres(databaseUrl!, { max: 1, onnotice: () => {} });
    try {
      const dbs = await admin<
        { datname: string }[]
      >`select datname from pg_database where datname like ${`laurel_t_${runId}_%`}`;
      for (const { datname } of dbs) await admin.unsafe(`drop database if exists "${datname}" with (force)`);
    } finally {
      await admin.end({ timeout: 2 });
    }
    await Promise.all(stops.map((s) => s()));
  };
}
