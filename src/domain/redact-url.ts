// A URL's password never reaches a log, an error or `atlas config list`.

/** The URL with its password replaced by ***; text that is not a URL is returned as it is. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (!u.password) return url;
    u.password = '***';
    return u.toString();
  } catch {
    return url.replace(/:\/\/([^:/@]*):[^@]*@/, '://$1:***@');
  }
}
