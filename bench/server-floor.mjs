// The floor under bench/server.mjs's concurrent figures: the least a server can do for the same
// turn on this machine. Each POST answers 200 text/event-stream at once, starts the same command
// agent (a plain spawn: no sandbox, no state, no lease, no hooks), forwards each line of its
// output as an SSE event and ends with an ok usage event. It logs "listening" as `atlas serve`
// does, so the bench drives both with the same client. GET /delay answers its event-loop delay
// since the last GET /delay (p99 and max, in ms, sampled every 10 ms as atlas's /metrics does).
// Usage: node bench/server-floor.mjs AGENT_COMMAND
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import { monitorEventLoopDelay } from 'node:perf_hooks';

const [command, ...args] = process.argv[2].split(' ');
const delay = monitorEventLoopDelay({ resolution: 10 });
delay.enable();
const server = createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/delay') {
    res.end(JSON.stringify({ p99: delay.percentile(99) / 1e6, max: delay.max / 1e6 }));
    return delay.reset();
  }
  req.resume();
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store' });
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'ignore'] });
    let rest = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk) => {
      const lines = (rest + chunk).split('\n');
      rest = lines.pop();
      for (const line of lines) if (line) res.write(`event: message\ndata: ${line}\n\n`);
    });
    child.on('close', (code) => res.end(`event: usage\ndata: {"ok":${code === 0}}\n\n`));
  });
});
server.listen(0, '127.0.0.1', () => console.log(JSON.stringify({ msg: 'listening', port: server.address().port })));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
