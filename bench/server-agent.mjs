// The command agent of bench/server.mjs: answers at once in Claude Code's stream-json, saying in
// its first message when its process started and when it wrote that message, so the bench can
// subtract the agent's own start-up from what the client waited.
const first = Date.now();
const out = (e) => process.stdout.write(`${JSON.stringify(e)}\n`);
out({ type: 'system', subtype: 'init', session_id: process.env.ATLAS_SESSION_ID || `bench-${process.pid}` });
out({ type: 'assistant', message: { content: [{ type: 'text', text: `origin=${Math.round(performance.timeOrigin)} first=${first}` }] } });
out({
  type: 'result',
  subtype: 'success',
  is_error: false,
  result: 'ok',
  usage: { input_tokens: 10, output_tokens: 5, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 },
});
