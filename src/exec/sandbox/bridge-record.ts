// The network bridges a long-lived atlas process (a sandboxed `atlas serve`) holds for its whole
// life, recorded in one folder, one file per process. The bridges are socat processes the sandbox
// library starts with atlas as parent: a SIGKILLed server leaves them serving sockets nobody can
// use, and a task folder's litter record names them only while a turn runs. The next server's
// start, and `atlas cleanup`, stop those of every dead writer on this machine.
import { mkdirSync, readdirSync, rmSync } from 'node:fs';
import { hostname } from 'node:os';
import { basename, isAbsolute, join } from 'node:path';
import { processStartIdentity } from '../../liveness/process-identity.js';
import { writeFileAtomic } from '../../store/atomic-write.js';
import { readJsonFile } from '../../store/json-file.js';
import { writerAlive } from './litter.js';
import type { BridgeSweep } from './socat.js';
import { stopBridges } from './socat.js';

const RECORD = /^(\d+)\.json$/;
/** The library's socket names (a record is read as untrusted: no other file is removed). */
const BRIDGE_SOCKET = /^claude-(http|socks)-[A-Za-z0-9_-]+\.sock$/;

interface BridgeRecord {
  pid: number;
  process_start: string;
  host: string;
  sockets: string[];
}

function readRecord(path: string): BridgeRecord | undefined {
  try {
    const data = readJsonFile(path) as Partial<BridgeRecord>;
    if (!Number.isInteger(data.pid) || typeof data.host !== 'string' || !Array.isArray(data.sockets)) return undefined;
    return {
      pid: data.pid!,
      process_start: typeof data.process_start === 'string' ? data.process_start : 'unknown',
      host: data.host,
      sockets: data.sockets.filter((s): s is string => typeof s === 'string' && isAbsolute(s) && BRIDGE_SOCKET.test(basename(s))),
    };
  } catch {
    return undefined;
  }
}

/**
 * Stops the bridges of the dead processes recorded in `dir` and removes their records (`dryRun`:
 * says what it would stop and remove, and changes nothing). A broken record is dropped.
 */
export function sweepDeadBridges(dir: string, options: { dryRun?: boolean } = {}): BridgeSweep {
  let names: string[];
  try {
    names = readdirSync(dir).filter((n) => RECORD.test(n));
  } catch {
    return { processes: [], sockets: [] };
  }
  const records = names.map((name) => ({ path: join(dir, name), record: readRecord(join(dir, name)) }));
  // A live server's bridges stay, and so do another machine's (a shared home): that machine sweeps them.
  const gone = records.filter(({ record }) => !record || !writerAlive(record));
  const sweep = stopBridges(
    gone.flatMap(({ record }) => record?.sockets ?? []),
    options.dryRun,
  );
  if (!options.dryRun) for (const { path } of gone) rmSync(path, { force: true });
  return sweep;
}

/** Records this process's bridges in `dir`: returns what removes the record when they are stopped. */
export function recordBridges(dir: string, sockets: readonly string[]): () => void {
  if (sockets.length === 0) return () => undefined;
  const path = join(dir, `${process.pid}.json`);
  const record: BridgeRecord = {
    pid: process.pid,
    process_start: processStartIdentity(process.pid) ?? 'unknown',
    host: hostname(),
    sockets: [...sockets],
  };
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  // Not fsynced: it must survive a killed process, not a power cut (which ends the bridges too).
  writeFileAtomic(path, `${JSON.stringify(record)}\n`, { durable: false });
  return () => rmSync(path, { force: true });
}
