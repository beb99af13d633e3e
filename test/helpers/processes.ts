import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { inject } from 'vitest';
import { generateApiKey } from '../../src/api-keys';
import { freePort } from './redis-cluster';
import { createTestDatabase, removeKeysUnder } from './server';

/** Polls `fn` every 100 ms until it answers true (a throw counts as false); throws after `ms`. */
export async function until(fn: () => Promise<boolean>, ms = 30_000): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await fn().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('timed out');
}

export interface LaurelProcess {
  proc: ChildProcess;
  origin: string;
  adminKey: string;
  /** Everything the process (and its children) wrote to stdout and stderr so far. */
  logs(): string;
}

/**
 * Starts `src/main.ts` as a real process on a free loopback port, with its own database and key
 * prefix, logging at info (each API process logs 'laurel listening'). `stop()` kills every process
 * started and removes its keys.
 */
export function laurelProcesses(prefixTag: string) {
  const children: ChildProcess[] = [];
  const prefix = `${prefixTag}${randomBytes(4).toString('hex')}`;
  return {
    prefix,
    async start(env: Record<string, string>): Promise<LaurelProcess> {
      const { redisUrl, clusterNodes } = inject('services');
      const admin = generateApiKey();
      const port = await freePort();
      const proc = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
        env: {
          ...process.env,
          PORT: String(port),
          HOST: '127.0.0.1',
          REDIS_URL: redisUrl,
          ...(clusterNodes ? { REDIS_CLUSTER_NODES: clusterNodes } : {}),
          DATABASE_URL: await createTestDatabase(),
          REDIS_KEY_PREFIX: prefix,
          ADMIN_API_KEY: admin.key,
          LOG_LEVEL: 'info',
          ...env,
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      children.push(proc);
      let logs = '';
      const collect = (d: Buffer) => {
        logs += d.toString();
      };
      proc.stdout?.on('data', collect);
      proc.stderr?.on('data', collect);
      return { proc, origin: `http://127.0.0.1:${port}`, adminKey: admin.key, logs: () => logs };
    },
    async stop(): Promise<void> {
      for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
      await removeKeysUnder(prefix);
    },
  };
}
