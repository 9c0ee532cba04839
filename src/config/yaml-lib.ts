// The yaml library, loaded on demand. It ships CommonJS, which the ESM bundle exposes only as a
// default export on dynamic import, so take the named functions from whichever form arrives.
type Yaml = typeof import('yaml');

export async function yamlLib(): Promise<Yaml> {
  const mod = (await import('yaml')) as Yaml & { default?: Yaml };
  return typeof mod.parse === 'function' ? mod : mod.default!;
}
