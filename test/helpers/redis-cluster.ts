import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

export interface LocalCluster {
  nodes: string;
  stop(): Promise<void>;
}

/**
 * A redis-server on a loopback port that keeps nothing on disk, with `args` added (later options win:
 * `--appendonly yes` turns persistence on); ready when it returns.
 */
export async function spawnRedis(port: number, dir: string, args: string[] = []): Promise<ChildProcess> {
  const p = spawn(
    'redis-server',
    [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--dir',
      dir,
      '--save',
      '',
      '--appendonly',
      'no',
      '--logfile',
      join(dir, `${port}.log`),
      ...args,
    ],
    { stdio: 'ignore' },
  );
  for (let i = 0; i < 50; i++) {
    try {
      await run('redis-cli', ['-p', String(port), 'ping']);
      break;
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return p;
}

/** Stops the servers and removes their folder. */
async function stopAll(procs: ChildProcess[], dir: string): Promise<void> {
  for (const p of procs) p.kill('SIGTERM');
  await Promise.all(
    procs.map((p) => new Promise((r) => (p.exitCode !== null ? r(null) : p.once('exit', r)))),
  );
  rmSync(dir, { recursive: true, force: true });
}

/**
 * A throwaway single Redis, for a test file that must not share its Redis with the others (one that
 * flushes the server's functions, say).
 */
export async function startRedis(): Promise<{ url: string; stop(): Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), 'laurel-redis-'));
  const port = await freePort();
  const proc = await spawnRedis(port, dir);
  return { url: `redis://127.0.0.1:${port}`, stop: () => stopAll([proc], dir) };
}

/** Starts a throwaway 3-master Redis Cluster from the redis-server binary on loopback ports. */
export async function startRedisCluster(masters = 3): Promise<LocalCluster> {
  const dir = mkdtempSync(join(tmpdir(), 'laurel-cluster-'));
  const ports: number[] = [];
  const procs: ChildProcess[] = [];
  for (let i = 0; i < masters; i++) {
    // Cluster bus = port + 10000: pick ports whose bus port is free too.
    let port = await freePort();
    while (port > 55000) port = await freePort();
    ports.push(port);
    procs.push(
      await spawnRedis(port, dir, [
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        join(dir, `nodes-${port}.conf`),
      ]),
    );
  }
  await run('redis-cli', [
    '--cluster',
    'create',
    ...ports.map((p) => `127.0.0.1:${p}`),
    '--cluster-replicas',
    '0',
    '--cluster-yes',
  ]);
  for (let i = 0; i < 100; i++) {
    const { stdout } = await run('redis-cli', ['-p', String(ports[0]), 'cluster', 'info']);
    if (stdout.includes('cluster_state:ok')) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    nodes: ports.map((p) => `127.0.0.1:${p}`).join(','),
    stop: () => stopAll(procs, dir),
  };
}
