// `npm run dev-certs -- [--dir ./dev-certs] [--name <dns name or IP>]… [--days 365] [--force]`:
// a development CA and the certificates the admin service and the internal links need
// (docs/security.md, "Internal links and the admin service"). Made with the `openssl` command
// (OpenSSL 3 on the project's machines): Node 20's node:crypto can read and check certificates but
// cannot sign them, and a binary everyone already has beats a new npm dependency.
//
// Files written (private keys 0600):
//   ca.pem, ca-key.pem            the CA; INTERNAL_TLS_CA_FILE and the CLI's ADMIN_TLS_CA_FILE
//   admin.pem, admin-key.pem      the admin service's server certificate (serverAuth only)
//   internal.pem, internal-key.pem one identity for every role on the internal links: server and
//                                 client (serverAuth + clientAuth)
// Every certificate names localhost, 127.0.0.1 and ::1, plus each --name (the host part of
// PAYOUT_GRPC_URL / CHAINS_GRPC_URL / ADMIN_ADDR as the clients will dial it, e.g. `payout` in
// compose or `payments-payout` in Kubernetes). For development and tests only: a production CA's key
// does not sit next to the certificates it signed.
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { join, resolve } from 'node:path';

export interface DevCertificateOptions {
  readonly dir: string;
  /** Extra DNS names or IP addresses the server certificates answer to. */
  readonly names?: readonly string[];
  readonly days?: number;
  /** The CA's common name (tests make a second CA that must not be trusted). */
  readonly caName?: string;
  /** Replace certificates already in `dir` (by default an existing CA is never overwritten). */
  readonly force?: boolean;
}

export interface DevCertificates {
  readonly dir: string;
  readonly caFile: string;
  readonly caKeyFile: string;
  readonly adminCertFile: string;
  readonly adminKeyFile: string;
  readonly internalCertFile: string;
  readonly internalKeyFile: string;
}

const defaultNames = ['localhost', '127.0.0.1', '::1'] as const;
const namePattern = /^[A-Za-z0-9.*:-]{1,253}$/;
const daysMax = 825;

function openssl(args: readonly string[]): void {
  execFileSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'] });
}

function subjectAltNames(names: readonly string[]): string {
  return names.map((name) => (isIP(name) !== 0 ? `IP:${name}` : `DNS:${name}`)).join(',');
}

/** A P-256 key, written 0600. */
function privateKey(file: string): void {
  openssl(['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', file]);
  chmodSync(file, 0o600);
}

/** A leaf certificate for `keyFile`, signed by the CA, with the given extensions. */
function signLeaf(dir: string, ca: { cert: string; key: string }, leaf: { name: string; key: string; cert: string; extensions: string; days: number }): void {
  const request = join(dir, `${leaf.name}.csr`);
  const extensionsFile = join(dir, `${leaf.name}.ext`);
  try {
    openssl(['req', '-new', '-key', leaf.key, '-subj', `/O=payments/CN=${leaf.name}`, '-out', request]);
    writeFileSync(extensionsFile, leaf.extensions);
    openssl(['x509', '-req', '-in', request, '-CA', ca.cert, '-CAkey', ca.key, '-CAcreateserial', '-days', String(leaf.days), '-sha256', '-extfile', extensionsFile, '-out', leaf.cert]);
  } finally {
    rmSync(request, { force: true });
    rmSync(extensionsFile, { force: true });
    rmSync(join(dir, 'ca.srl'), { force: true });
  }
}

export function createDevCertificates(options: DevCertificateOptions): DevCertificates {
  const dir = resolve(options.dir);
  const days = options.days ?? 365;
  if (!Number.isInteger(days) || days < 1 || days > daysMax) throw new RangeError(`--days must be 1..${daysMax}`);
  const extra = options.names ?? [];
  for (const name of extra) if (!namePattern.test(name)) throw new Error(`--name ${JSON.stringify(name)} is not a DNS name or IP address`);
  const names = [...new Set([...defaultNames, ...extra])];
  const files: DevCertificates = {
    dir,
    caFile: join(dir, 'ca.pem'),
    caKeyFile: join(dir, 'ca-key.pem'),
    adminCertFile: join(dir, 'admin.pem'),
    adminKeyFile: join(dir, 'admin-key.pem'),
    internalCertFile: join(dir, 'internal.pem'),
    internalKeyFile: join(dir, 'internal-key.pem'),
  };
  if (existsSync(files.caFile) && options.force !== true) throw new Error(`${files.caFile} exists: pass --force to replace the CA and every certificate`);
  mkdirSync(dir, { recursive: true, mode: 0o700 });

  privateKey(files.caKeyFile);
  openssl([
    'req', '-x509', '-new', '-key', files.caKeyFile, '-sha256', '-days', String(days),
    '-subj', `/O=payments/CN=${options.caName ?? 'payments dev CA'}`,
    '-addext', 'basicConstraints=critical,CA:TRUE,pathlen:0',
    '-addext', 'keyUsage=critical,keyCertSign,cRLSign',
    '-out', files.caFile,
  ]);
  const ca = { cert: files.caFile, key: files.caKeyFile };
  const common = ['basicConstraints=critical,CA:FALSE', 'keyUsage=critical,digitalSignature', `subjectAltName=${subjectAltNames(names)}`];
  privateKey(files.adminKeyFile);
  // Server only: the admin's certificate is no identity on the internal links.
  signLeaf(dir, ca, { name: 'payments-admin', key: files.adminKeyFile, cert: files.adminCertFile, days, extensions: [...common, 'extendedKeyUsage=serverAuth', ''].join('\n') });
  privateKey(files.internalKeyFile);
  signLeaf(dir, ca, { name: 'payments-internal', key: files.internalKeyFile, cert: files.internalCertFile, days, extensions: [...common, 'extendedKeyUsage=serverAuth,clientAuth', ''].join('\n') });
  return files;
}

function parseArguments(argv: readonly string[]): DevCertificateOptions {
  let dir = 'dev-certs';
  let days: number | undefined;
  let force = false;
  const names: string[] = [];
  for (let index = 0; index < argv.length; index += 1) {
    const argument = argv[index];
    const value = argv[index + 1];
    if (argument === '--force') force = true;
    else if ((argument === '--dir' || argument === '--name' || argument === '--days') && value !== undefined) {
      if (argument === '--dir') dir = value;
      else if (argument === '--name') names.push(value);
      else days = Number(value);
      index += 1;
    } else throw new Error(`usage: npm run dev-certs -- [--dir DIR] [--name NAME]… [--days N] [--force] (got ${String(argument)})`);
  }
  return { dir, names, force, ...(days === undefined ? {} : { days }) };
}

if (process.argv[1]?.endsWith('dev-certs.ts')) {
  try {
    const made = createDevCertificates(parseArguments(process.argv.slice(2)));
    process.stdout.write(
      [
        `development CA and certificates in ${made.dir} (for development and tests only)`,
        `  admin service:   ADMIN_TLS_CERT_FILE=${made.adminCertFile} ADMIN_TLS_KEY_FILE=${made.adminKeyFile}`,
        `  admin CLI:       ADMIN_TLS_CA_FILE=${made.caFile}`,
        `  internal links:  INTERNAL_TLS_CA_FILE=${made.caFile} INTERNAL_TLS_CERT_FILE=${made.internalCertFile} INTERNAL_TLS_KEY_FILE=${made.internalKeyFile}`,
        '',
      ].join('\n'),
    );
  } catch (error) {
    process.stderr.write(`dev-certs: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  }
}
