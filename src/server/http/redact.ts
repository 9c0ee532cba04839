// What error bodies and log lines must not carry: the store's address and endpoint, the server's
// folders (ATLAS_HOME, server.repos_root), credentials in URLs and CLI hints meant for the
// operator. Error messages from deeper layers pass through this before they leave the server.
import type { Config } from '../../config/schema.js';

export function makeRedactor(home: string, config: Config): (text: string) => string {
  const secrets = [config.sync.store, config.sync.s3.endpoint, config.server.repos_root, home]
    .filter((v) => v.length >= 4)
    // Longest first, so a store inside ATLAS_HOME is named as the store.
    .sort((a, b) => b.length - a.length)
    .map((v) => ({ text: v, name: v === home ? '<server>' : v === config.server.repos_root ? '<repos>' : '<store>' }));
  return (text) => {
    let out = text;
    for (const s of secrets) out = out.split(s.text).join(s.name);
    return (
      out
        // user:password@ in any URL
        .replace(/(\w+:\/\/)[^/\s@]+@/g, '$1')
        // `atlas ...` hints are for whoever runs the server
        .replace(/\s*\([^()]*`atlas [^`]*`[^()]*\)/g, '')
        .replace(/[;,:]?\s*(?:(?:run|use|try|with|see)\s+)?`atlas [^`]*`/g, '')
        // other file-system paths (not API routes): only their last part
        .replace(
          /(^|[\s"'(=:])\/(?:tmp|home|root|var|srv|opt|usr|etc|work|mnt|media|run|Users|private)(?:\/[^\s"')]*)?\/([^\s"'/)]+)/g,
          '$1…/$2',
        )
    );
  };
}
