// Where templates come from, in search order (docs/templates.md): the repository's
// .atlas/templates/, config templates.dirs, $ATLAS_HOME/templates/, then the built-in ones.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, extname, isAbsolute, join, resolve } from 'node:path';
import { AtlasError, EXIT } from '../domain/errors.js';
import type { Template } from '../domain/template.js';
import { homePaths } from '../store/paths.js';
import { builtinTemplatesDir } from './builtin-dir.js';
import { parseTemplateText, TEMPLATE_NAME_PATTERN } from './parse.js';

export type TemplateOrigin = 'repo' | 'config' | 'home' | 'builtin';

export interface TemplateSearchOptions {
  /** Root of the git working tree around cwd, if any. */
  repoRoot?: string | undefined;
  home: string;
  /** Config `templates.dirs`. */
  dirs: readonly string[];
  /** Relative `templates.dirs` resolve against the repository root, else this. */
  cwd: string;
}

export interface TemplateDir {
  dir: string;
  origin: TemplateOrigin;
}

export interface LoadedTemplate {
  template: Template;
  origin: TemplateOrigin;
}

const EXTENSIONS = ['.yaml', '.yml'];

function expandDir(dir: string, base: string): string {
  if (dir === '~') return homedir();
  if (dir.startsWith('~/')) return join(homedir(), dir.slice(2));
  return isAbsolute(dir) ? dir : resolve(base, dir);
}

export function templateSearchPath(options: TemplateSearchOptions): TemplateDir[] {
  const dirs: TemplateDir[] = [];
  if (options.repoRoot) dirs.push({ dir: join(options.repoRoot, '.atlas', 'templates'), origin: 'repo' });
  for (const dir of options.dirs) dirs.push({ dir: expandDir(dir, options.repoRoot ?? options.cwd), origin: 'config' });
  dirs.push({ dir: homePaths(options.home).templatesDir, origin: 'home' });
  const builtin = builtinTemplatesDir();
  if (builtin) dirs.push({ dir: builtin, origin: 'builtin' });
  return dirs;
}

function templateFiles(dir: string): string[] {
  try {
    return readdirSync(dir)
      .filter((f) => EXTENSIONS.includes(extname(f)) && TEMPLATE_NAME_PATTERN.test(basename(f, extname(f))))
      .sort();
  } catch {
    return [];
  }
}

export function findTemplateFile(name: string, options: TemplateSearchOptions): { file: string; origin: TemplateOrigin } | undefined {
  for (const { dir, origin } of templateSearchPath(options)) {
    for (const ext of EXTENSIONS) {
      const file = join(dir, `${name}${ext}`);
      if (existsSync(file)) return { file, origin };
    }
  }
  return undefined;
}

async function loadFile(file: string, name: string): Promise<Template> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new AtlasError(`cannot read template ${file}: ${(error as Error).message}`, { exitCode: EXIT.input, cause: error });
  }
  return parseTemplateText(text, file, name);
}

export async function loadTemplate(name: string, options: TemplateSearchOptions): Promise<LoadedTemplate> {
  if (!TEMPLATE_NAME_PATTERN.test(name)) {
    throw new AtlasError(`"${name}" is not a template name`, {
      exitCode: EXIT.input,
      hint: 'template names are letters, digits, "-" and "_"; run `atlas templates list`',
    });
  }
  const found = findTemplateFile(name, options);
  if (!found) {
    const listed = (await listTemplates(options)).filter((t) => !t.shadowed);
    const known = listed.filter((t) => !t.error).map((t) => t.name);
    const broken = listed.filter((t) => t.error).map((t) => t.name);
    const brokenText =
      broken.length > 0
        ? `; ${broken.length} more do${broken.length === 1 ? 'es' : ''} not load (${broken.join(', ')}): \`atlas templates list\` says why`
        : '';
    throw new AtlasError(`no template named "${name}"`, {
      exitCode: EXIT.notFound,
      hint: `available: ${known.length > 0 ? known.join(', ') : '(none)'}${brokenText}; add your own as .atlas/templates/${name}.yaml (docs/templates.md)`,
    });
  }
  return { template: await loadFile(found.file, name), origin: found.origin };
}

export interface TemplateListing {
  name: string;
  origin: TemplateOrigin;
  file: string;
  /** A template of the same name earlier in the search path hides this one. */
  shadowed: boolean;
  template?: Template;
  /** Why the file could not be loaded. */
  error?: string;
}

/** Every template file on the search path, in search order, each parsed (errors kept, not thrown). */
export async function listTemplates(options: TemplateSearchOptions): Promise<TemplateListing[]> {
  const seen = new Set<string>();
  const listings: TemplateListing[] = [];
  for (const { dir, origin } of templateSearchPath(options)) {
    for (const f of templateFiles(dir)) {
      const name = basename(f, extname(f));
      const file = join(dir, f);
      const shadowed = seen.has(name);
      seen.add(name);
      const listing: TemplateListing = { name, origin, file, shadowed };
      try {
        listing.template = await loadFile(file, name);
      } catch (error) {
        listing.error = error instanceof Error ? error.message : String(error);
      }
      listings.push(listing);
    }
  }
  return listings;
}
