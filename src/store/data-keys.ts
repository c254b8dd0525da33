// The master keys of encryption at rest (src/store/data-encryption.ts) from the environment:
//   DATA_ENCRYPTION_KEY           32 bytes, base64 or hex: new data is encrypted under it;
//   DATA_ENCRYPTION_KEY_ID        its id, stored with every blob and value (default `k1`);
//   DATA_ENCRYPTION_RETIRED_KEYS  `id:key,id:key`: keys rotated out, still read (docs/operations.md).
// Outside sandbox mode the key is required: a process that would hold personal data refuses to
// start without it. In sandbox mode without a key, a fixed key derived from a public constant is
// used (id `sandbox`): stable across restarts and processes, and worthless as a secret, which is
// why it is refused outside sandbox mode.
import { createHash } from 'node:crypto';
import { createDataKeyring, dataKeyBytes, dataKeyIdPattern, type DataKey, type DataKeyring } from './data-encryption.ts';

export const sandboxDataKeyId = 'sandbox';
export const defaultDataKeyId = 'k1';

export interface DataKeyEnv {
  readonly DATA_ENCRYPTION_KEY?: string | undefined;
  readonly DATA_ENCRYPTION_KEY_ID?: string | undefined;
  readonly DATA_ENCRYPTION_RETIRED_KEYS?: string | undefined;
  readonly sandbox: boolean;
}

/** 32 bytes written as 64 hex digits or as base64; the error names the variable, never the value. */
export function parseDataKey(variable: string, text: string): Buffer {
  const trimmed = text.trim();
  if (/^[0-9a-fA-F]{64}$/.test(trimmed)) return Buffer.from(trimmed, 'hex');
  if (/^[A-Za-z0-9+/]{43}=?$/.test(trimmed)) {
    const bytes = Buffer.from(trimmed, 'base64');
    if (bytes.length === dataKeyBytes) return bytes;
  }
  throw new Error(`${variable} must be ${dataKeyBytes} bytes as 64 hex digits or base64 (e.g. \`openssl rand -base64 32\`)`);
}

function keyId(variable: string, id: string): string {
  if (!dataKeyIdPattern.test(id)) throw new Error(`${variable}: a data key id is 1-64 of A-Z a-z 0-9 . _ -`);
  return id;
}

function sandboxKey(): DataKey {
  return { id: sandboxDataKeyId, key: createHash('sha256').update('payments sandbox data key: public, never for real data').digest() };
}

/** The keyring of sandbox mode without a key (tests and `npm start`). */
export function sandboxDataKeyring(): DataKeyring {
  return createDataKeyring(sandboxKey());
}

/** The keyring the environment names; throws a message naming the variable when it is wrong or missing. */
export function dataKeyringFromEnv(env: DataKeyEnv): DataKeyring {
  const retired: DataKey[] = [];
  for (const entry of (env.DATA_ENCRYPTION_RETIRED_KEYS ?? '').split(',').map((part) => part.trim()).filter((part) => part !== '')) {
    const colon = entry.indexOf(':');
    if (colon <= 0) throw new Error('DATA_ENCRYPTION_RETIRED_KEYS must be a comma-separated list of id:key');
    retired.push({ id: keyId('DATA_ENCRYPTION_RETIRED_KEYS', entry.slice(0, colon)), key: parseDataKey('DATA_ENCRYPTION_RETIRED_KEYS', entry.slice(colon + 1)) });
  }
  const text = env.DATA_ENCRYPTION_KEY;
  if (text === undefined || text.trim() === '') {
    if (!env.sandbox) {
      throw new Error(
        'DATA_ENCRYPTION_KEY is required outside sandbox mode (SANDBOX=0): KYC documents and personal fields are encrypted at rest ' +
          'under it. Generate one with `openssl rand -base64 32`, keep it in your secret store, and give it an id in DATA_ENCRYPTION_KEY_ID.',
      );
    }
    return createDataKeyring(sandboxKey(), retired);
  }
  const id = keyId('DATA_ENCRYPTION_KEY_ID', env.DATA_ENCRYPTION_KEY_ID ?? defaultDataKeyId);
  const current = { id, key: parseDataKey('DATA_ENCRYPTION_KEY', text) };
  if (!env.sandbox && [current, ...retired].some((key) => key.id === sandboxDataKeyId || key.key.equals(sandboxKey().key))) {
    throw new Error(`the sandbox data key (id ${sandboxDataKeyId}) is public: it is refused outside sandbox mode`);
  }
  // In sandbox mode data written under the derived key stays readable after a real key is set.
  return createDataKeyring(current, env.sandbox && !retired.some((key) => key.id === sandboxDataKeyId) && id !== sandboxDataKeyId ? [...retired, sandboxKey()] : retired);
}
