// The repository's own validation commands, for validation steps without commands when config
// `validation.commands` is empty (docs/templates.md, "Detection"). The first source that yields
// commands wins, in this order: package.json scripts, Makefile, go.mod, Cargo.toml, pyproject.toml.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { AtlasError, EXIT } from '../domain/errors.js';

export interface DetectedCommands {
  commands: string[];
  /** Where they came from, for messages: "package.json scripts", "Makefile", ... */
  source: string;
}

// npm init writes this placeholder test script; running it only fails.
const NPM_DEFAULT_TEST = /no test specified/;

function readText(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

/**
 * The npm script `test` (with its pretest and posttest, which `npm test` runs too) that already
 * runs script `name`: by `npm run name` (pnpm, yarn), npm-run-all/run-s/run-p, or the same text.
 */
function npmTestRuns(scripts: Record<string, unknown>, name: string): string | undefined {
  const own = String(scripts[name]).trim();
  const invokes = new RegExp(`(?:^|[\\s;&|(])(?:npm|pnpm|yarn)\\s+(?:run(?:-script)?\\s+)?${name}(?=$|[\\s;&|)])`);
  const runAll = new RegExp(`(?:^|[\\s;&|(])(?:npm-run-all|run-s|run-p)\\s[^;&|]*?(?<=\\s)${name}(?=$|[\\s;&|)])`);
  return ['pretest', 'test', 'posttest'].find((key) => {
    const text = scripts[key];
    return typeof text === 'string' && (invokes.test(text) || runAll.test(text) || text.trim() === own);
  });
}

function fromPackageJson(dir: string): DetectedCommands | undefined {
  const text = readText(join(dir, 'package.json'));
  if (text === undefined) return undefined;
  let scripts: Record<string, unknown> = {};
  try {
    const pkg = JSON.parse(text) as { scripts?: Record<string, unknown> };
    if (pkg && typeof pkg.scripts === 'object' && pkg.scripts !== null) scripts = pkg.scripts;
  } catch {
    return undefined;
  }
  const has = (name: string) => typeof scripts[name] === 'string' && (scripts[name] as string).trim().length > 0;
  const test = has('test') && !NPM_DEFAULT_TEST.test(scripts['test'] as string);
  const commands: string[] = [];
  const skipped: string[] = [];
  // A script npm test already runs (minimist's pretest runs lint) would run twice: left out.
  const add = (name: string) => {
    const by = test ? npmTestRuns(scripts, name) : undefined;
    if (by) skipped.push(`npm run ${name} left out: npm test runs it${by === 'test' ? '' : ` through ${by}`}`);
    else commands.push(`npm run ${name}`);
  };
  if (has('lint')) add('lint');
  if (has('typecheck')) add('typecheck');
  else if (has('type-check')) add('type-check');
  if (test) commands.push('npm test');
  if (commands.length === 0) return undefined;
  return { commands, source: `package.json scripts${skipped.length > 0 ? ` (${skipped.join('; ')})` : ''}` };
}

/** Explicit targets of a Makefile (rules "name:", not variable assignments "name := x"). */
export function makefileTargets(text: string): Set<string> {
  const targets = new Set<string>();
  for (const line of text.split(/\r?\n/)) {
    const match = /^([A-Za-z0-9_.\- ]+?)\s*::?(.*)$/.exec(line);
    if (!match || match[2]!.startsWith('=')) continue;
    for (const name of match[1]!.trim().split(/\s+/)) targets.add(name);
  }
  return targets;
}

function fromMakefile(dir: string): string[] {
  for (const file of ['GNUmakefile', 'makefile', 'Makefile']) {
    const text = readText(join(dir, file));
    if (text === undefined) continue;
    const targets = makefileTargets(text);
    return ['lint', 'test', 'check'].filter((t) => targets.has(t)).map((t) => `make ${t}`);
  }
  return [];
}

export function detectValidationCommands(dir: string): DetectedCommands | undefined {
  const npm = fromPackageJson(dir);
  if (npm) return npm;
  const sources: [string, () => string[]][] = [
    ['Makefile', () => fromMakefile(dir)],
    ['go.mod', () => (existsSync(join(dir, 'go.mod')) ? ['go vet ./...', 'go test ./...'] : [])],
    ['Cargo.toml', () => (existsSync(join(dir, 'Cargo.toml')) ? ['cargo test'] : [])],
    ['pyproject.toml', () => (existsSync(join(dir, 'pyproject.toml')) ? ['python3 -m pytest'] : [])],
  ];
  for (const [source, find] of sources) {
    const commands = find();
    if (commands.length > 0) return { commands, source };
  }
  return undefined;
}

/** The commands a validation step runs: its own, else config, else detected; or a clear error. */
export function resolveValidationCommands(
  stepCommands: readonly string[],
  configCommands: readonly string[],
  dir: string,
  configSource = 'config validation.commands',
): DetectedCommands {
  if (stepCommands.length > 0) return { commands: [...stepCommands], source: 'the template' };
  if (configCommands.length > 0) return { commands: [...configCommands], source: configSource };
  const detected = detectValidationCommands(dir);
  if (detected) return detected;
  throw new AtlasError(`no validation commands found for ${dir}`, {
    exitCode: EXIT.input,
    hint:
      'atlas looks for package.json scripts (lint, typecheck, test), Makefile targets (lint, test, check), go.mod, Cargo.toml or pyproject.toml; ' +
      'otherwise set validation.commands in .atlas/config.yaml, e.g.\n  validation:\n    commands: ["./run-tests.sh"]',
  });
}
