// Builds dist/ once before any worker starts: two workers finding it stale at once would rebuild
// it together, one test running the CLI while the other build rewrites it.
import { ensureBuilt } from './helpers/engine-fixtures.js';
import { MOTO_PROBE_ENV, motoMissing } from './helpers/moto.js';

export default function setup(): void {
  ensureBuilt();
  // Whether moto can run is asked once (a second of Python each time), not by every file using it.
  process.env[MOTO_PROBE_ENV] = motoMissing() ?? '';
}
