// A ListObjectsV2 answer read without the SDK (s3-direct.ts): the objects (key, size, modified),
// the folders of a delimiter listing, and the token of the next page. Anything that is not such a
// document gives undefined, and the listing goes through the SDK, which names the error.

export interface ListedPage {
  objects: { key: string; size: number; modifiedMs: number }[];
  folders: string[];
  /** The next page's continuation token, when the listing is truncated. */
  next: string | undefined;
}

const ENTITIES: Readonly<Record<string, string>> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };

/** XML text with its five entities and character references decoded; undefined for an unknown entity. */
export function xmlText(raw: string): string | undefined {
  let bad = false;
  const text = raw.replace(/&(#x[0-9a-fA-F]+|#[0-9]+|[a-z]+);|&/g, (whole, name: string | undefined) => {
    const code = name?.startsWith('#') ? (name[1] === 'x' ? Number.parseInt(name.slice(2), 16) : Number(name.slice(1))) : undefined;
    const value =
      name === undefined
        ? undefined
        : code === undefined
          ? ENTITIES[name]
          : code > 0 && code <= 0x10ffff
            ? String.fromCodePoint(code)
            : undefined;
    if (value === undefined) bad = true;
    return value ?? whole;
  });
  return bad ? undefined : text;
}

/** The text of the first `<tag>` directly in `xml`, undefined when it is absent or unreadable. */
function field(xml: string, tag: string): string | undefined {
  const m = new RegExp(`<${tag}>([^<]*)</${tag}>`).exec(xml);
  return m ? xmlText(m[1]!) : undefined;
}

/** The page, or undefined when `xml` is not a ListObjectsV2 result this reader understands. */
export function parseListPage(xml: string): ListedPage | undefined {
  const root = /<ListBucketResult\b[^>]*>([\s\S]*)<\/ListBucketResult>\s*$/.exec(xml);
  if (!root) return undefined;
  const body = root[1]!;
  // An encoded listing (EncodingType=url) or CDATA is not what was asked: the SDK's.
  if (/<EncodingType>|<!\[CDATA\[/.test(body)) return undefined;
  const objects: ListedPage['objects'] = [];
  for (const m of body.matchAll(/<Contents>([\s\S]*?)<\/Contents>/g)) {
    const key = field(m[1]!, 'Key');
    const size = Number(field(m[1]!, 'Size') ?? '0');
    const modifiedMs = Date.parse(field(m[1]!, 'LastModified') ?? '');
    if (key === undefined || !Number.isSafeInteger(size) || size < 0 || Number.isNaN(modifiedMs)) return undefined;
    objects.push({ key, size, modifiedMs });
  }
  const folders: string[] = [];
  for (const m of body.matchAll(/<CommonPrefixes>([\s\S]*?)<\/CommonPrefixes>/g)) {
    const prefix = field(m[1]!, 'Prefix');
    if (prefix === undefined) return undefined;
    folders.push(prefix);
  }
  // Contents and CommonPrefixes taken out, what is left holds the page's own fields.
  const rest = body.replace(/<Contents>[\s\S]*?<\/Contents>|<CommonPrefixes>[\s\S]*?<\/CommonPrefixes>/g, '');
  const truncated = field(rest, 'IsTruncated');
  if (truncated !== 'true' && truncated !== 'false') return undefined;
  const next = truncated === 'true' ? field(rest, 'NextContinuationToken') : undefined;
  if (truncated === 'true' && !next) return undefined;
  return { objects, folders, next };
}
