// DSSE v1 envelopes (github.com/secure-systems-lab/dsse, envelope.md and protocol.md): the payload
// is signed through the pre-authentication encoding, so the payload type is signed with it.

export const IN_TOTO_PAYLOAD_TYPE = 'application/vnd.in-toto+json';

export interface DsseSignature {
  keyid: string;
  /** Base64 of the signature bytes (DER ECDSA for atlas's P-256 key). */
  sig: string;
}

export interface DsseEnvelope {
  payload: string;
  payloadType: string;
  signatures: DsseSignature[];
}

/** PAE(type, body) = "DSSEv1" SP LEN(type) SP type SP LEN(body) SP body, lengths in bytes, ASCII decimal. */
export function preAuthEncoding(payloadType: string, body: Uint8Array): Buffer {
  const type = Buffer.from(payloadType, 'utf8');
  return Buffer.concat([Buffer.from(`DSSEv1 ${type.length} `), type, Buffer.from(` ${body.length} `), body]);
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** Standard or URL-safe base64, as DSSE allows either; undefined when it is neither. */
export function decodeBase64(text: string): Buffer | undefined {
  const standard = text.replace(/-/g, '+').replace(/_/g, '/');
  if (!BASE64.test(standard) || standard.replace(/=+$/, '').length % 4 === 1) return undefined;
  return Buffer.from(standard, 'base64');
}

/** What is wrong with the shape of an envelope, or undefined when it is one. */
export function envelopeShapeProblem(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return 'expected a JSON object';
  const e = value as Record<string, unknown>;
  if (typeof e['payloadType'] !== 'string') return 'payloadType: expected a string';
  if (typeof e['payload'] !== 'string' || decodeBase64(e['payload']) === undefined) return 'payload: expected base64';
  if (!Array.isArray(e['signatures']) || e['signatures'].length === 0) return 'signatures: expected a non-empty list';
  for (const [i, s] of (e['signatures'] as unknown[]).entries()) {
    if (typeof s !== 'object' || s === null) return `signatures[${i}]: expected an object`;
    const sig = (s as Record<string, unknown>)['sig'];
    if (typeof sig !== 'string' || decodeBase64(sig) === undefined) return `signatures[${i}].sig: expected base64`;
    const keyid = (s as Record<string, unknown>)['keyid'];
    if (keyid !== undefined && typeof keyid !== 'string') return `signatures[${i}].keyid: expected a string`;
  }
  return undefined;
}
