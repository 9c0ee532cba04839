// Packs (docs/sync.md#packs): small contents travel and rest together. A push puts the new contents
// under PACK_BELOW bytes one after another into packs of about PACK_TARGET bytes, each stored as one
// blob named by its own SHA-256, and a manifest entry says where its content sits (`pack`,
// `offset`; the length is the entry's `size`). A request per content costs more than its bytes
// when contents are small (a server spends milliseconds on each); a pack is one request for
// hundreds of them, as restic and git do. A pull reads spans of a pack: neighbouring contents it
// needs in one ranged request (the whole pack when it needs most of it), never the whole pack for
// one file. Pure.

/** Contents smaller than this go into packs; larger ones stay blobs of their own. */
export const PACK_BELOW = 1024 * 1024;

/** A pack is sent once it holds this many bytes (the last one of a push may hold fewer). */
export const PACK_TARGET = 4 * 1024 * 1024;

/**
 * A pack is also sent once it holds this many contents: a push holds each content of the packs it
 * is building, and tiny files would otherwise make a pack of tens of thousands of them.
 */
export const PACK_MAX_CONTENTS = 4096;

/**
 * A pull reads through a gap of up to this many bytes of contents it does not need rather than ask
 * twice: a request costs a server milliseconds (moto: about 10 ms of CPU), a MiB on the wire less.
 */
export const SPAN_GAP = 1024 * 1024;

/**
 * A ranged read never spans more than this. A read is streamed into its files, never held in
 * memory (transfer/stage-span.ts), so this only bounds what a read cut off midway asks again: a
 * whole pack is one request.
 */
export const SPAN_MAX = 64 * 1024 * 1024;

export interface PackLocation {
  /** The SHA-256 of the pack, the name of its blob. */
  pack: string;
  /** Where the content starts in the pack, in bytes. */
  offset: number;
}

export interface Packed {
  pack?: string;
  offset?: number;
  size: number;
  sha256?: string;
}

/** One ranged read of a pack: bytes [start, end) and the entries inside, in offset order. */
export interface Span<T> {
  pack: string;
  start: number;
  end: number;
  entries: T[];
}

/** The reads a pull makes for `entries` (each with a pack): per pack, neighbours joined into spans. */
export function planSpans<T extends Packed>(entries: Iterable<T>): Span<T>[] {
  const byPack = new Map<string, T[]>();
  for (const e of entries) {
    const list = byPack.get(e.pack!);
    if (list) list.push(e);
    else byPack.set(e.pack!, [e]);
  }
  const spans: Span<T>[] = [];
  for (const [pack, list] of byPack) {
    list.sort((a, b) => a.offset! - b.offset!);
    let span: Span<T> | undefined;
    for (const e of list) {
      const end = e.offset! + e.size;
      if (span && e.offset! <= span.end + SPAN_GAP && Math.max(end, span.end) - span.start <= SPAN_MAX) {
        span.end = Math.max(span.end, end);
        span.entries.push(e);
        continue;
      }
      span = { pack, start: e.offset!, end, entries: [e] };
      spans.push(span);
    }
  }
  return spans;
}

/**
 * Where each content of `wanted` (by SHA-256) sits: the first place the lists name for it (the
 * first named wins, for a content held twice). Only those, not a table of every content's place
 * (100,000 of them at the end of a first push of 100,000 files).
 */
export function placesOf(wanted: ReadonlySet<string>, ...lists: readonly (readonly Packed[])[]): Map<string, PackLocation> {
  const found = new Map<string, PackLocation>();
  for (const list of lists) {
    for (const f of list)
      if (f.pack !== undefined && f.sha256 !== undefined && wanted.has(f.sha256) && !found.has(f.sha256))
        found.set(f.sha256, { pack: f.pack, offset: f.offset! });
  }
  return found;
}

/** Pruning takes a pack apart once at least this share of its bytes is used by no kept version. */
export const REPACK_UNUSED_SHARE = 0.5;

export interface PackedContent {
  offset: number;
  size: number;
  sha256: string;
}

export interface RepackPlan {
  /**
   * Packs to take apart: the contents still used move into blobs of their own, then the pack goes
   * (unless it was made young again since `modifiedMs`, when it was listed: a push uses it again).
   */
  apart: { pack: string; used: PackedContent[]; unused: number; modifiedMs: number }[];
  /** Bytes no kept version uses that stay, inside packs that are still mostly used. */
  unusedKept: number;
}

/**
 * Which packs pruning takes apart: those the kept versions use (`uses`, per pack the contents named
 * at each offset) where at least REPACK_UNUSED_SHARE of the bytes are used by none, and older than
 * the grace period (a push under way may be about to name more of a young one's contents).
 */
export function planRepack(
  blobs: ReadonlyMap<string, { size: number; modifiedMs: number }>,
  uses: ReadonlyMap<string, ReadonlyMap<number, PackedContent>>,
  nowMs: number,
  graceSeconds: number,
): RepackPlan {
  const plan: RepackPlan = { apart: [], unusedKept: 0 };
  for (const [pack, contents] of uses) {
    const blob = blobs.get(pack);
    if (!blob) continue; // gone already: its contents are blobs of their own
    const used = [...contents.values()].sort((a, b) => a.offset - b.offset);
    let usedBytes = 0;
    let reach = 0;
    // Contents never overlap in a pack a push wrote; a manifest saying otherwise is not counted twice.
    for (const c of used) {
      usedBytes += Math.max(0, c.offset + c.size - Math.max(c.offset, reach));
      reach = Math.max(reach, c.offset + c.size);
    }
    const unused = Math.max(0, blob.size - usedBytes);
    if (unused === 0) continue;
    if (unused >= blob.size * REPACK_UNUSED_SHARE && nowMs - blob.modifiedMs > graceSeconds * 1000)
      plan.apart.push({ pack, used, unused, modifiedMs: blob.modifiedMs });
    else plan.unusedKept += unused;
  }
  plan.apart.sort((a, b) => (a.pack < b.pack ? -1 : 1));
  return plan;
}

/**
 * The packs a push makes of `contents`, in their order, each closed once it reaches PACK_TARGET
 * bytes or PACK_MAX_CONTENTS contents: the same contents give the same packs, byte for byte, so a
 * push run again after one was killed finds the packs it had sent, by name, instead of sending them again.
 */
export function packGroups<T extends { size: number }>(contents: readonly T[]): T[][] {
  const groups: T[][] = [];
  let group: T[] = [];
  let bytes = 0;
  for (const c of contents) {
    group.push(c);
    bytes += c.size;
    if (bytes >= PACK_TARGET || group.length >= PACK_MAX_CONTENTS) {
      groups.push(group);
      group = [];
      bytes = 0;
    }
  }
  if (group.length > 0) groups.push(group);
  return groups;
}
