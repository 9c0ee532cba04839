// How deep a JSON text nests, read before it is parsed (issue 37): JSON.parse of 500,000 nested
// arrays under 1 MB holds the one thread for 0.2-0.6 s, and no body the API takes nests deeper
// than a few levels. One pass over the characters, strings skipped, stopping at the limit.

/** Nesting allowed in a request body (arrays and objects). */
export const MAX_JSON_DEPTH = 64;

/** Whether `text` opens more than `limit` arrays or objects inside one another. */
export function nestsDeeperThan(text: string, limit: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: the next character is escaped
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > limit) return true;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return false;
}
