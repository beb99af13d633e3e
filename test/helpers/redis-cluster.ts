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
    const p = spawn(
      'redis-server',
      [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        join(dir, `nodes-${port}.conf`),
        '--dir',
        dir,
        '--save',
        '',
        '--appendonly',
        'no',
        '--logfile',
        join(dir, `${port}.log`),
      ],
      { stdio: 'ignore' },
    );
    procs.push(p);
  }
  for (const port of ports) {
    for (let i = 0; i < 50; i++) {
      try {
        await run('redis-cli', ['-p', String(port), 'ping']);
        break;
      } catch {
        await new Promise((r) => setTimeout(r, 100));
      }
    }
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
    async stop() {
      for (const p of procs) p.kill('SIGTERM');
      await Promise.all(
        procs.map((p) => new Promise((r) => (p.exitCode !== null ? r(null) : p.once('exit', r)))),
      );
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
