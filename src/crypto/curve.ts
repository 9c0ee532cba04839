// secp256k1 (@noble/curves) for every atlas key and signature, loaded through here so that the
// generator's table is set before the first multiplication. noble builds a width-6 table on first
// use (about 20 ms of CPU and many short-lived BigInts), which pays off only after about fifty
// multiplications; an atlas process that signs or checks a few receipts makes ten. A width-3
// table costs a few milliseconds; `widenGenerator` builds a wider one before a large batch.
import { secp256k1 } from '@noble/curves/secp256k1.js';

export { secp256k1 };

const SMALL_WINDOW = 3;
let generatorWindowNow = SMALL_WINDOW;
secp256k1.Point.BASE.precompute(SMALL_WINDOW);

/** The width of the generator's table in use. */
export function generatorWindow(): number {
  return generatorWindowNow;
}

/** Builds the generator's table at `window` now, unless one at least as wide is already set. */
export function widenGenerator(window: number): void {
  if (window <= generatorWindowNow) return;
  secp256k1.Point.BASE.precompute(window, false);
  generatorWindowNow = window;
}
