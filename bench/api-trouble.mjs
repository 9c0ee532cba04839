// API trouble seen at once (issue 35): the real Claude Code under `atlas start --local` against a
// Messages API on 127.0.0.1 that answers 500, then against one that never answers. Prints the time
// to atlas's first message about the 500s (target <= 10 s) and how long after Claude Code's last
// event a hanging API's run was stopped (target: within ai.stall_timeout, 5 s here, plus a tick).
// Usage: npm run build && node bench/api-trouble.mjs
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const ATLAS = join(ROOT, 'bin', 'atlas.cjs');
const STALL_S = 5;
const root = realpathSync(mkdtempSync(join(tmpdir(), 'atlas-bench-api-')));

function repo(name) {
  const dir = join(root, name);
  mkdirSync(join(dir, '.atlas', 'templates'), { recursive: true });
  writeFileSync(
    join(dir, '.atlas', 'templates', 't.yaml'),
    'name: t\nsteps:\n  - name: implement\n    type: ai\n    max_attempts: 1\n    prompt: "Do {{description}}"\n',
  );
  const git = (...args) => execFileSync('git', args, { cwd: dir, stdio: 'ignore' });
  git('init', '-q', '-b', 'main');
  git('add', '-A');
  git('-c', 'user.name=b', '-c', 'user.email=b@e', 'commit', '-q', '-m', 'init');
  return dir;
}

/** A Messages API: `answer` decides for each POST (500 now, or never). */
async function api(answer) {
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      if (req.method === 'POST' && req.url.startsWith('/v1/messages') && !req.url.includes('count_tokens')) return answer(res);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(req.method === 'HEAD' ? undefined : '{"input_tokens":1}');
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    close: () => (server.closeAllConnections(), new Promise((r) => server.close(r))),
  };
}

/** Runs atlas start; resolves with the seconds to the first output matching `watch` (then Ctrl-C). */
function run(name, url, extra, watch) {
  const env = {
    ...process.env,
    ATLAS_HOME: join(root, `${name}-home`),
    CLAUDE_CONFIG_DIR: join(root, `${name}-claude`),
    ANTHROPIC_BASE_URL: url,
    ANTHROPIC_API_KEY: 'sk-ant-bench-not-a-key',
    PATH: [join(ROOT, 'node_modules', '.bin'), process.env.PATH].join(delimiter),
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    NO_COLOR: '1',
  };
  mkdirSync(env.CLAUDE_CONFIG_DIR, { recursive: true });
  const started = Date.now();
  const child = spawn(process.execPath, [ATLAS, 'start', 't', 'bench', '--no-interactive', '--local', ...extra], {
    cwd: repo(name),
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return new Promise((resolve) => {
    let seen;
    const take = (chunk) => {
      if (seen === undefined && watch.test(chunk.toString())) {
        seen = (Date.now() - started) / 1000;
        child.kill('SIGINT');
      }
    };
    child.stdout.on('data', take);
    child.stderr.on('data', take);
    child.on('close', () => resolve({ seen }));
  });
}

try {
  const failing = await api((res) => {
    res.writeHead(500, { 'content-type': 'application/json' });
    res.end('{"type":"error","error":{"type":"api_error","message":"boom"}}');
  });
  const r500 = await run('api500', failing.url, [], /the API answered 500/);
  await failing.close();
  const ok500 = r500.seen !== undefined && r500.seen <= 10;
  console.log(
    `API answering 500: first message after ${r500.seen?.toFixed(1) ?? 'never'} s (target <= 10 s) ${ok500 ? 'ok' : 'OVER TARGET'}`,
  );

  const hanging = await api(() => {});
  const rHang = await run('hang', hanging.url, ['-c', `ai.stall_timeout=${STALL_S}s`], /gave no sign of life/);
  await hanging.close();
  const okHang = rHang.seen !== undefined && rHang.seen <= STALL_S + 10;
  console.log(
    `hanging API: stopped with its message ${rHang.seen?.toFixed(1) ?? 'never'} s after atlas started (ai.stall_timeout ${STALL_S} s, from Claude Code's first event; target <= ${STALL_S + 10} s with its start-up) ${okHang ? 'ok' : 'OVER TARGET'}`,
  );
  process.exitCode = ok500 && okHang ? 0 : 1;
} finally {
  rmSync(root, { recursive: true, force: true });
}
