// File-type sniffing for KYC documents: the five types the spec accepts, recognised by their
// leading bytes. The declared type (multipart Content-Type) is never trusted on its own: a caller
// accepts a document only when the declared type and the sniffed type agree (`checkDocumentType`).

export type DocumentMimeType = 'image/jpeg' | 'image/png' | 'image/webp' | 'image/heic' | 'application/pdf';

export const documentMimeTypes: readonly DocumentMimeType[] = [
  'image/jpeg',
  'image/png',
  'image/webp',
  'image/heic',
  'application/pdf',
];

const pngSignature = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a] as const;
/** Major brands of an ISO-BMFF `ftyp` box that we read as HEIC/HEIF still images. */
const heicMajorBrands = new Set(['heic', 'heix', 'mif1', 'msf1', 'hevc']);
/** Compatible brands that identify HEIC even under another major brand (never `mif1` alone: AVIF uses it too). */
const heicCompatibleBrands = new Set(['heic', 'heix']);
/** Most compatible brands we look at in an `ftyp` box (bounded work on hostile input). */
const ftypCompatibleBrandsMax = 64;
/** Leading bytes `sniffDocumentType` ever reads: a streamed document is checked on these alone. */
export const documentSniffBytes = 16 + 4 * ftypCompatibleBrandsMax;

function startsWith(bytes: Uint8Array, signature: readonly number[], offset = 0): boolean {
  if (bytes.length < offset + signature.length) return false;
  return signature.every((byte, index) => bytes[offset + index] === byte);
}

function ascii(bytes: Uint8Array, offset: number, length: number): string {
  if (bytes.length < offset + length) return '';
  return String.fromCharCode(...bytes.subarray(offset, offset + length));
}

function isHeic(bytes: Uint8Array): boolean {
  if (ascii(bytes, 4, 4) !== 'ftyp') return false;
  const majorBrand = ascii(bytes, 8, 4);
  if (heicMajorBrands.has(majorBrand)) return true;
  if (majorBrand === 'avif' || majorBrand === 'avis') return false;
  // Box layout: size(4) 'ftyp'(4) major(4) minor version(4) compatible brands(4 each) up to size.
  const boxBytes = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getUint32(0);
  const end = Math.min(boxBytes, bytes.length, 16 + 4 * ftypCompatibleBrandsMax);
  for (let offset = 16; offset + 4 <= end; offset += 4) {
    if (heicCompatibleBrands.has(ascii(bytes, offset, 4))) return true;
  }
  return false;
}

/** The document type the leading bytes prove, or null when they match none of the five. */
export function sniffDocumentType(bytes: Uint8Array): DocumentMimeType | null {
  if (startsWith(bytes, [0xff, 0xd8, 0xff])) return 'image/jpeg';
  if (startsWith(bytes, pngSignature)) return 'image/png';
  if (ascii(bytes, 0, 4) === 'RIFF' && ascii(bytes, 8, 4) === 'WEBP') return 'image/webp';
  if (ascii(bytes, 0, 5) === '%PDF-') return 'application/pdf';
  if (isHeic(bytes)) return 'image/heic';
  return null;
}

/** Common spellings of the accepted types; anything else must be one of `documentMimeTypes`. */
const declaredTypeAliases: Readonly<Record<string, DocumentMimeType>> = {
  'image/jpg': 'image/jpeg',
  'image/pjpeg': 'image/jpeg',
  'image/heif': 'image/heic',
};

/** Lower-cases a Content-Type, drops its parameters and maps known aliases; null when not accepted. */
export function normaliseDeclaredType(declared: string): DocumentMimeType | null {
  const essence = (declared.split(';')[0] ?? '').trim().toLowerCase();
  const alias = declaredTypeAliases[essence];
  if (alias !== undefined) return alias;
  return documentMimeTypes.find((type) => type === essence) ?? null;
}

export type DocumentTypeCheck =
  | { readonly ok: true; readonly type: DocumentMimeType }
  | { readonly ok: false; readonly problem: 'unsupported_declared_type' | 'unrecognised_content' | 'type_mismatch'; readonly reason: string };

/**
 * Accepts a document only when its declared type is one of the five and the bytes prove the same
 * type. The reasons are safe to return to the partner (they name types, never content).
 */
export function checkDocumentType(declaredType: string, bytes: Uint8Array): DocumentTypeCheck {
  const declared = normaliseDeclaredType(declaredType);
  if (declared === null) {
    return {
      ok: false,
      problem: 'unsupported_declared_type',
      reason: `Document type must be one of ${documentMimeTypes.join(', ')}`,
    };
  }
  const sniffed = sniffDocumentType(bytes);
  if (sniffed === null) {
    return { ok: false, problem: 'unrecognised_content', reason: 'Document content is not a supported image or PDF' };
  }
  if (sniffed !== declared) {
    return {
      ok: false,
      problem: 'type_mismatch',
      reason: `Document declared as ${declared} but its content is ${sniffed}`,
    };
  }
  return { ok: true, type: sniffed };
}
