// moto's AWS server (python3 -m moto.server) on 127.0.0.1 for the DynamoDB tests: started on a free
// port, ready when it answers, stopped by stop(). Credentials and region for the SDK are the test's.
import { spawn, spawnSync } from 'node:child_process';
import { freePort } from './free-port.js';

export const motoSkipReason: string | undefined = spawnSync('python3', ['-c', 'import moto.server'], { stdio: 'ignore' }).status === 0 ? undefined : 'moto is not installed (pip install "moto[server]")';

export interface TestMoto {
  url: string;
  stop(): Promise<void>;
}

export async function startMoto(): Promise<TestMoto> {
  const port = await freePort();
  const child = spawn('python3', ['-m', 'moto.server', '-H', '127.0.0.1', '-p', String(port)], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (d) => (stderr += d));
  const url = `http://127.0.0.1:${port}`;
  const end = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`moto exited: ${stderr}`);
    try {
      if ((await fetch(url)).ok) break;
    } catch {
      // Not listening yet.
    }
    if (Date.now() > end) throw new Error(`moto did not start: ${stderr}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url,
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('close', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

/** The environment the AWS SDK needs against moto (any credentials are accepted). */
export const MOTO_ENV = { AWS_ACCESS_KEY_ID: 'test', AWS_SECRET_ACCESS_KEY: 'test', AWS_REGION: 'us-east-1' };
