// Encryption at rest of personal data (KYC documents and fields): envelope encryption with
// AES-256-GCM from node:crypto. Every blob and every sealed value gets a fresh random 256-bit data
// key, which is encrypted ("wrapped") by a master key from the environment; the master key's id is
// stored next to it, so after a rotation old data stays readable with the retired key while new data
// uses the new one (docs/operations.md "The data key"). Pure functions over bytes: the keyring comes
// from src/store/data-keys.ts, the store decorator is src/store/encrypted-blobs.ts.
//
// A blob is streamed (never whole in memory), so it is encrypted in segments of `segmentBytes`,
// each its own GCM message whose additional data names the blob key, the segment's index and
// whether it is the last: segments cannot be reordered, dropped, moved to another blob, and the
// blob cannot be cut short (the last segment says it is last), without the read failing.
//
//   blob   := "PDE1" | idLength (1 byte) | keyId | wrapped | segment*
//   wrapped:= iv (12) | encrypted data key (32) | tag (16)          (AAD: "PDE1" keyId blobKey)
//   segment:= length (4 bytes, big-endian) | ciphertext | tag (16)  (IV: 4 zero bytes | index (8 bytes);
//                                                                  AAD: blobKey NUL index NUL last)
// A blob has at least one segment (an empty blob is one empty last segment).
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

export interface DataKey {
  /** Stored with every blob and value it wraps a key for: [A-Za-z0-9._-]{1,64}. */
  readonly id: string;
  /** 32 bytes. */
  readonly key: Buffer;
}

/** The key new data is encrypted with, and the retired ones still read. */
export interface DataKeyring {
  readonly current: DataKey;
  /** The master key of this id, or undefined when it is not configured. */
  key(id: string): Buffer | undefined;
}

/** Data that cannot be decrypted: tampered with, cut short, or under a key that is not configured. */
export class DataDecryptionError extends Error {
  override readonly name = 'DataDecryptionError';
}

export const dataKeyIdPattern = /^[A-Za-z0-9._-]{1,64}$/;
export const dataKeyBytes = 32;
/** Plaintext bytes per blob segment (the last may be shorter). */
export const segmentBytes = 64 * 1024;

export function createDataKeyring(current: DataKey, retired: readonly DataKey[] = []): DataKeyring {
  const keys = new Map<string, Buffer>();
  for (const entry of [current, ...retired]) {
    if (!dataKeyIdPattern.test(entry.id)) throw new Error(`data key id ${JSON.stringify(entry.id)} must be 1-64 of A-Z a-z 0-9 . _ -`);
    if (entry.key.length !== dataKeyBytes) throw new Error(`data key ${entry.id} must be ${dataKeyBytes} bytes`);
    if (keys.has(entry.id)) throw new Error(`data key id ${entry.id} is configured twice`);
    keys.set(entry.id, Buffer.from(entry.key));
  }
  return { current: { id: current.id, key: Buffer.from(current.key) }, key: (id) => keys.get(id) };
}

const magic = Buffer.from('PDE1', 'ascii');
const ivBytes = 12;
const tagBytes = 16;
const wrappedBytes = ivBytes + dataKeyBytes + tagBytes;

function seal(key: Buffer, iv: Buffer, plaintext: Buffer, aad: Buffer): { ciphertext: Buffer; tag: Buffer } {
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(aad);
  const ciphertext = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return { ciphertext, tag: cipher.getAuthTag() };
}

function open(key: Buffer, iv: Buffer, ciphertext: Buffer, tag: Buffer, aad: Buffer, what: string): Buffer {
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, iv);
    decipher.setAAD(aad);
    decipher.setAuthTag(tag);
    return Buffer.concat([decipher.update(ciphertext), decipher.final()]);
  } catch {
    throw new DataDecryptionError(`${what} failed authentication: tampered with, or not written for this place`);
  }
}

function masterKey(keyring: DataKeyring, id: string, what: string): Buffer {
  const key = keyring.key(id);
  if (key === undefined) {
    throw new DataDecryptionError(`${what} is encrypted under data key ${JSON.stringify(id)}, which is not configured (DATA_ENCRYPTION_KEY_ID or DATA_ENCRYPTION_RETIRED_KEYS)`);
  }
  return key;
}

/** A fresh data key wrapped under the current master key, bound to `context` (a blob key, a record). */
function newWrappedKey(keyring: DataKeyring, context: string): { dataKey: Buffer; keyId: string; wrapped: Buffer } {
  const dataKey = randomBytes(dataKeyBytes);
  const iv = randomBytes(ivBytes);
  const { id, key } = keyring.current;
  const sealed = seal(key, iv, dataKey, wrapAad(id, context));
  return { dataKey, keyId: id, wrapped: Buffer.concat([iv, sealed.ciphertext, sealed.tag]) };
}

function unwrapKey(keyring: DataKeyring, keyId: string, wrapped: Buffer, context: string, what: string): Buffer {
  if (wrapped.length !== wrappedBytes) throw new DataDecryptionError(`${what}: malformed wrapped key`);
  const key = masterKey(keyring, keyId, what);
  return open(key, wrapped.subarray(0, ivBytes), wrapped.subarray(ivBytes, ivBytes + dataKeyBytes), wrapped.subarray(ivBytes + dataKeyBytes), wrapAad(keyId, context), what);
}

function wrapAad(keyId: string, context: string): Buffer {
  return Buffer.concat([magic, Buffer.from(`${keyId}\0${context}`, 'utf8')]);
}

function segmentIv(index: number): Buffer {
  const iv = Buffer.alloc(ivBytes);
  iv.writeBigUInt64BE(BigInt(index), 4);
  return iv;
}

function segmentAad(blobKey: string, index: number, last: boolean): Buffer {
  return Buffer.from(`${blobKey}\0${index}\0${last ? 1 : 0}`, 'utf8');
}

function encodeSegment(dataKey: Buffer, blobKey: string, index: number, last: boolean, plaintext: Buffer): Buffer {
  const { ciphertext, tag } = seal(dataKey, segmentIv(index), plaintext, segmentAad(blobKey, index, last));
  const length = Buffer.alloc(4);
  length.writeUInt32BE(ciphertext.length);
  return Buffer.concat([length, ciphertext, tag]);
}

/**
 * The encrypted form of a blob stored under `blobKey`, produced as `chunks` arrive (one segment is
 * held back until the next byte or the end shows whether it is the last).
 */
export async function* encryptBlobStream(keyring: DataKeyring, blobKey: string, chunks: AsyncIterable<Uint8Array>): AsyncGenerator<Buffer> {
  const { dataKey, keyId, wrapped } = newWrappedKey(keyring, blobKey);
  const id = Buffer.from(keyId, 'ascii');
  yield Buffer.concat([magic, Buffer.from([id.length]), id, wrapped]);
  let index = 0;
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  let full: Buffer | null = null; // a whole segment not yet known to be the last
  for await (const chunk of chunks) {
    if (!(chunk instanceof Uint8Array)) throw new TypeError('blob stream chunks must be Uint8Arrays');
    let offset = 0;
    while (offset < chunk.length) {
      const take = Math.min(segmentBytes - pendingBytes, chunk.length - offset);
      pending.push(Buffer.from(chunk.subarray(offset, offset + take)));
      pendingBytes += take;
      offset += take;
      if (pendingBytes === segmentBytes) {
        if (full !== null) yield encodeSegment(dataKey, blobKey, index++, false, full);
        full = Buffer.concat(pending, pendingBytes);
        pending = [];
        pendingBytes = 0;
      }
    }
  }
  if (pendingBytes > 0 || full === null) {
    if (full !== null) yield encodeSegment(dataKey, blobKey, index++, false, full);
    yield encodeSegment(dataKey, blobKey, index, true, Buffer.concat(pending, pendingBytes));
  } else {
    yield encodeSegment(dataKey, blobKey, index, true, full);
  }
}

/** Encrypts a whole blob (the same format as the stream). */
export async function encryptBlob(keyring: DataKeyring, blobKey: string, bytes: Uint8Array): Promise<Buffer> {
  const parts: Buffer[] = [];
  async function* one(): AsyncGenerator<Uint8Array> {
    yield bytes;
  }
  for await (const part of encryptBlobStream(keyring, blobKey, one())) parts.push(part);
  return Buffer.concat(parts);
}

/** The plaintext of a blob stored under `blobKey`; DataDecryptionError when it is not intact. */
export function decryptBlob(keyring: DataKeyring, blobKey: string, stored: Uint8Array): Buffer {
  const bytes = Buffer.from(stored.buffer, stored.byteOffset, stored.byteLength);
  const what = 'the blob';
  if (bytes.length < magic.length + 1 || !bytes.subarray(0, magic.length).equals(magic)) {
    throw new DataDecryptionError(`${what} is not in the encrypted format (written before encryption at rest, or not by this service)`);
  }
  const idLength = bytes[magic.length] ?? 0;
  let offset = magic.length + 1;
  const keyId = bytes.subarray(offset, offset + idLength).toString('ascii');
  offset += idLength;
  if (bytes.length < offset + wrappedBytes) throw new DataDecryptionError(`${what} is cut short`);
  const dataKey = unwrapKey(keyring, keyId, bytes.subarray(offset, offset + wrappedBytes), blobKey, what);
  offset += wrappedBytes;
  const plaintext: Buffer[] = [];
  for (let index = 0; ; index++) {
    if (bytes.length < offset + 4) throw new DataDecryptionError(`${what} is cut short`);
    const length = bytes.readUInt32BE(offset);
    offset += 4;
    if (length > segmentBytes || bytes.length < offset + length + tagBytes) throw new DataDecryptionError(`${what} is cut short or malformed`);
    const ciphertext = bytes.subarray(offset, offset + length);
    const tag = bytes.subarray(offset + length, offset + length + tagBytes);
    offset += length + tagBytes;
    const last = offset === bytes.length;
    // A segment that authenticates only with the other flag is a blob cut short (or extended).
    plaintext.push(open(dataKey, segmentIv(index), ciphertext, tag, segmentAad(blobKey, index, last), `${what} (segment ${index})`));
    if (last) return Buffer.concat(plaintext);
  }
}

/** A small value sealed for storage inside a JSON document (e.g. an actor's state). */
export interface SealedValue {
  readonly sealed__: 'v1';
  readonly keyId: string;
  /** base64: iv | encrypted data key | tag. */
  readonly wrappedKey: string;
  /** base64: iv | ciphertext | tag. */
  readonly data: string;
}

export function isSealedValue(value: unknown): value is SealedValue {
  if (value === null || typeof value !== 'object') return false;
  const candidate = value as Partial<SealedValue>;
  return candidate.sealed__ === 'v1' && typeof candidate.keyId === 'string' && typeof candidate.wrappedKey === 'string' && typeof candidate.data === 'string';
}

/** Seals the UTF-8 text for `context` (it must be given again to open it: a value moved elsewhere does not open). */
export function sealText(keyring: DataKeyring, context: string, text: string): SealedValue {
  const { dataKey, keyId, wrapped } = newWrappedKey(keyring, context);
  const iv = randomBytes(ivBytes);
  const { ciphertext, tag } = seal(dataKey, iv, Buffer.from(text, 'utf8'), Buffer.from(context, 'utf8'));
  return { sealed__: 'v1', keyId, wrappedKey: wrapped.toString('base64'), data: Buffer.concat([iv, ciphertext, tag]).toString('base64') };
}

export function openText(keyring: DataKeyring, context: string, sealed: SealedValue): string {
  const what = 'a sealed value';
  const dataKey = unwrapKey(keyring, sealed.keyId, Buffer.from(sealed.wrappedKey, 'base64'), context, what);
  const data = Buffer.from(sealed.data, 'base64');
  if (data.length < ivBytes + tagBytes) throw new DataDecryptionError(`${what} is malformed`);
  const plaintext = open(dataKey, data.subarray(0, ivBytes), data.subarray(ivBytes, data.length - tagBytes), data.subarray(data.length - tagBytes), Buffer.from(context, 'utf8'), what);
  return plaintext.toString('utf8');
}
