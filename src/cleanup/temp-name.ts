// The names writeFileAtomic gives its temp files (store/atomic-write.ts tempName):
// `.<target>.<pid>.<stamp>.tmp`, the stamp being Date.now() in base 36 followed by a decimal
// per-process counter. Only a name of exactly this shape is atlas's. Pure.

export interface TempName {
  /** The file the write was for, e.g. hook.json. */
  target: string;
  /** The writing process. */
  pid: number;
}

// Date.now() is 8 base-36 digits from 1973 to 5188; the counter is 1 to 6 decimal digits.
const TEMP_NAME = /^\.([^/\\]+)\.([1-9]\d{0,9})\.([0-9a-z]{8}\d{1,6})\.tmp$/;

export function parseTempName(name: string): TempName | undefined {
  const m = TEMP_NAME.exec(name);
  if (!m) return undefined;
  const target = m[1]!;
  if (target === '.' || target === '..') return undefined;
  return { target, pid: Number(m[2]) };
}
