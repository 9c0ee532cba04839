// Builds dist/ once before any worker starts: two workers finding it stale at once would rebuild
// it together, one test running the CLI while the other build rewrites it.
import { ensureBuilt } from './helpers/engine-fixtures.js';

export default function setup(): void {
  ensureBuilt();
}
