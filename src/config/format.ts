// Config values written back as text: Go-style durations ("5m", "720h") and YAML scalars, for the
// commented default config.yaml and `atlas config list`.
import type { Leaf } from './schema.js';
import { LEAVES } from './schema.js';

const UNITS: [number, string][] = [
  [3_600_000, 'h'],
  [60_000, 'm'],
  [1000, 's'],
];

export function formatDurationSetting(ms: number): string {
  if (ms === 0) return '0';
  for (const [size, unit] of UNITS) if (ms % size === 0) return `${ms / size}${unit}`;
  return `${ms}ms`;
}

/** A value as it would be written in config.yaml. */
export function formatSetting(leaf: Leaf, value: unknown): string {
  switch (leaf.kind.type) {
    case 'duration':
      return typeof value === 'number' ? formatDurationSetting(value) : String(value);
    case 'strings':
      return JSON.stringify(value ?? []);
    case 'string':
    case 'enum':
      return JSON.stringify(String(value ?? ''));
    default:
      return String(value);
  }
}

/** config.yaml with every key commented out at its default, each with its doc and env name. */
export function renderDefaultConfig(): string {
  const lines = [
    '# atlas configuration. Every key is listed at its default value, commented out:',
    '# uncomment a key (and the section lines above it) to change it. docs/configuration.md explains each.',
    "# Precedence: -c key=value flags > ATLAS_* environment > the repository's .atlas/config.yaml",
    '#             > this file > defaults. Durations: 30s, 5m, 720h, 1h30m.',
  ];
  let open: string[] = [];
  for (const leaf of LEAVES) {
    const parts = leaf.key.split('.');
    const parents = parts.slice(0, -1);
    let shared = 0;
    while (shared < open.length && shared < parents.length && open[shared] === parents[shared]) shared++;
    if (shared === 0) lines.push('#');
    for (let depth = shared; depth < parents.length; depth++) {
      lines.push(`# ${'  '.repeat(depth)}${parents[depth]}:`);
    }
    open = parents;
    const indent = '  '.repeat(parents.length);
    lines.push(`# ${indent}# ${leaf.doc} (env ${leaf.env})`);
    lines.push(`# ${indent}${parts[parts.length - 1]}: ${formatSetting(leaf, leaf.default)}`);
  }
  return `${lines.join('\n')}\n`;
}
