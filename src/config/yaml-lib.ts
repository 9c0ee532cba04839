// The yaml library, loaded on demand. It ships CommonJS, which the ESM bundle exposes only as a
// default export on dynamic import, so take the named functions from whichever form arrives.
type Yaml = typeof import('yaml');

export async function yamlLib(): Promise<Yaml> {
  const mod = (await import('yaml')) as Yaml & { default?: Yaml };
  return typeof mod.parse === 'function' ? mod : mod.default!;
}

export interface ParsedYaml {
  data: unknown;
  /** The library's warnings (an unresolved tag, ...), one line each, for atlas to show as its own. */
  warnings: string[];
}

/**
 * YAML text to data. Syntax errors throw (the library's error, with line and column); warnings
 * are returned instead of going to process.emitWarning, which would print raw `(node:PID)` lines.
 */
export async function parseYamlText(text: string): Promise<ParsedYaml> {
  const { parseDocument } = await yamlLib();
  const doc = parseDocument(text, { logLevel: 'error' });
  if (doc.errors.length > 0) throw doc.errors[0]!;
  const data = doc.toJS() as unknown;
  return { data, warnings: doc.warnings.map((w) => w.message.split('\n')[0]!.trim()) };
}
