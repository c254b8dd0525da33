// Certificates for tests of the admin service and the internal links: the development CA made by
// `npm run dev-certs` (scripts/dev-certs.ts), and a second, unrelated CA whose certificates must be
// refused. Everything lives in one temp directory, removed by `remove()`.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createDevCertificates, type DevCertificates } from '../../scripts/dev-certs.ts';

export interface TestCertificates {
  /** The deployment's CA and certificates. */
  readonly trusted: DevCertificates;
  /** Another CA's: the same kinds of certificate, trusted by nobody in the deployment. */
  readonly other: DevCertificates;
  /** The environment of a process serving the admin service over TLS. */
  readonly adminServerEnv: Readonly<Record<string, string>>;
  /** The environment of a process on the internal links (server or client). */
  readonly internalEnv: Readonly<Record<string, string>>;
  pem(file: string): Buffer;
  remove(): void;
}

export function createTestCertificates(): TestCertificates {
  const dir = mkdtempSync(join(tmpdir(), 'dev-tls-'));
  try {
    const trusted = createDevCertificates({ dir: join(dir, 'trusted') });
    const other = createDevCertificates({ dir: join(dir, 'other'), caName: 'someone else' });
    return {
      trusted,
      other,
      adminServerEnv: { ADMIN_TLS_CERT_FILE: trusted.adminCertFile, ADMIN_TLS_KEY_FILE: trusted.adminKeyFile },
      internalEnv: { INTERNAL_TLS_CA_FILE: trusted.caFile, INTERNAL_TLS_CERT_FILE: trusted.internalCertFile, INTERNAL_TLS_KEY_FILE: trusted.internalKeyFile },
      pem: (file) => readFileSync(file),
      remove: () => rmSync(dir, { recursive: true, force: true }),
    };
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
}
