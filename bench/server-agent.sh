# The shell agent of bench/server.mjs: the same answer as server-agent.mjs from a process that
# costs about a millisecond to start, so the figures measure the server and not 200 Node.js
# start-ups sharing two cores. Its own start-up is nil: origin and first are the same moment.
t=${EPOCHREALTIME/./}
t=${t:0:13}
printf '{"type":"system","subtype":"init","session_id":"%s"}\n' "${ATLAS_SESSION_ID:-bench-$$}"
printf '{"type":"assistant","message":{"content":[{"type":"text","text":"origin=%s first=%s"}]}}\n' "$t" "$t"
printf '{"type":"result","subtype":"success","is_error":false,"result":"ok","usage":{"input_tokens":10,"output_tokens":5,"cache_read_input_tokens":0,"cache_creation_input_tokens":0}}\n'
