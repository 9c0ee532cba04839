// One ranged read of a pack (docs/sync.md#packs) written straight into the temp files of the
// contents it holds, each piece as it is handed over (scan/body-pieces.ts): nothing of it is held
// in memory, so one read may span a whole pack (one request for hundreds of files) at no cost in
// memory. Each content is checked against its hashes and staged (transfer/staging.ts) once its
// last byte is written.
import { unlinkSync } from 'node:fs';
import type { Span } from '../../domain/sync-pack.js';
import type { FileEntry } from '../../domain/sync-state.js';
import { entryTime } from '../../domain/sync-time.js';
import type { Pieces } from '../scan/body-pieces.js';
import { noPieces } from '../scan/body-pieces.js';
import { chunksRead } from '../scan/chunk-collect.js';
import type { Stage } from '../scan/safe-fs.js';
import { checkStaged, ensureParents } from '../scan/safe-fs.js';
import { NewFile } from '../scan/stream-file.js';
import type { SyncStore } from '../stores/store.js';

export interface SpanTarget {
  root: string;
  store: SyncStore;
  tree: string;
  stage: Stage;
  /** For messages: the entry "in version V of T (location)". */
  describe: (entry: FileEntry) => string;
  /** Called with each content's bytes once it is staged. */
  staged: (bytes: number) => void;
}

/**
 * Stages the entries of `span` (in offset order; two may share their bytes: one content under two
 * names) from one streamed read; false when the pack is gone (the caller fetches them another way).
 * A body cut off and read again skips the contents already staged.
 */
export async function stageSpan(span: Span<FileEntry>, target: SpanTarget): Promise<boolean> {
  const { root, store, tree, stage } = target;
  const done = new Set<FileEntry>();
  const entries = span.entries;
  const finish = (entry: FileEntry, file: NewFile) => {
    // Mode (at creation) and time (at closing) set through the descriptor: two path lookups fewer a file.
    const got = file.close(entryTime(entry));
    try {
      checkStaged(entry, got, target.describe(entry), file.path, stage, true);
    } catch (error) {
      unlinkQuietly(file.path);
      throw error;
    }
    done.add(entry);
    target.staged(got.bytes);
  };
  const consume = async (pieces: Pieces) => {
    // Every folder first: each piece is then written as it is handed over, with nothing to wait for.
    for (const entry of entries) if (!done.has(entry)) await ensureParents(root, entry.path, stage.folders, stage.created);
    const open = new Map<FileEntry, NewFile>();
    const begin = (entry: FileEntry) => {
      // Checked by its SHA-256 (every packed content has one): its MD5 is not computed.
      if (!done.has(entry))
        open.set(entry, new NewFile(stage.tempFor(entry.path), entry.mode ?? 0o644, entry.mode !== undefined, entry.sha256 === undefined));
    };
    let next = 0;
    let at = span.start;
    try {
      await pieces((chunk) => {
        const end = at + chunk.length;
        while (next < entries.length && entries[next]!.offset! < end) begin(entries[next++]!);
        for (const [entry, file] of open) {
          const from = Math.max(entry.offset!, at);
          const to = Math.min(entry.offset! + entry.size, end);
          if (to > from) file.write(chunk.subarray(from - at, to - at));
          if (entry.offset! + entry.size <= end) {
            open.delete(entry);
            finish(entry, file);
          }
        }
        at = end;
        chunksRead(chunk.length);
      });
      // Past the end of what arrived: empty contents there, and those a short pack lacks (their check names them).
      while (next < entries.length) begin(entries[next++]!);
      for (const [entry, file] of open) {
        open.delete(entry);
        finish(entry, file);
      }
    } catch (error) {
      for (const file of open.values()) {
        file.close();
        unlinkQuietly(file.path);
      }
      throw error;
    }
    return true;
  };
  // Only empty contents: nothing to read (and no range to ask for).
  if (span.end === span.start) return consume(noPieces);
  return (await store.streamPackRange(tree, span.pack, span.start, span.end - span.start, consume)) === true;
}

function unlinkQuietly(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // gone already
  }
}
