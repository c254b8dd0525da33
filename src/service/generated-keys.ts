// Keys the process generated at start (DEMO_API_KEY or OPS_API_KEY not set) are shown once to
// whoever started it, and never to a log collector. On a terminal (stdout is a TTY: `npm start`)
// they are printed. Otherwise stdout is a log stream (systemd's journal, a container's log, a file),
// so they are written to `<DATA_DIR>/generated-keys-<role>.env` instead, readable by the service's
// user only (0600), replaced at every start, in shell syntax (`. <file>` sets DEMO_API_KEY and
// OPS_API_KEY), and only that path is printed. One file per role: processes of several roles may
// share a DATA_DIR, and each generates its own keys (roles run apart should set both keys anyway:
// they must share OPS_API_KEY).
import { closeSync, constants, fchmodSync, mkdirSync, openSync, writeSync } from 'node:fs';
import { join } from 'node:path';

export interface GeneratedKeys {
  readonly demoApiKey?: string;
  readonly opsApiKey?: string;
  /** The demo partner's portal administrator's password (docs/portal.md). */
  readonly demoPortalPassword?: string;
}

export interface KeyReport {
  /** The lines to print about the keys (none when nothing was generated). */
  readonly lines: readonly string[];
  /** How an example command names the demo key: the key itself on a terminal, else the variable. */
  readonly demoKeyInExample: string;
}

export function generatedKeysPath(dataDir: string, role: string): string {
  return join(dataDir, `generated-keys-${role}.env`);
}

/**
 * Writes the file with mode 0600 whatever was there before: a file left with wider permissions is
 * narrowed before the keys are written, and a symbolic link in its place is refused (O_NOFOLLOW).
 */
function writePrivateFile(path: string, text: string): void {
  const fd = openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_NOFOLLOW, 0o600);
  try {
    fchmodSync(fd, 0o600);
    writeSync(fd, text);
  } finally {
    closeSync(fd);
  }
}

export function reportGeneratedKeys(keys: GeneratedKeys, options: { readonly isTty: boolean; readonly dataDir: string; readonly role: string }): KeyReport {
  const entries: Array<[string, string, string]> = [];
  if (keys.demoApiKey !== undefined) entries.push(['DEMO_API_KEY', 'demo partner API key', keys.demoApiKey]);
  if (keys.opsApiKey !== undefined) entries.push(['OPS_API_KEY', 'ops API key', keys.opsApiKey]);
  if (keys.demoPortalPassword !== undefined) entries.push(['DEMO_PORTAL_PASSWORD', 'demo portal password', keys.demoPortalPassword]);
  if (options.isTty) {
    return { lines: entries.map(([, label, key]) => `${label}: ${key}`), demoKeyInExample: keys.demoApiKey ?? '$DEMO_API_KEY' };
  }
  if (entries.length === 0) return { lines: [], demoKeyInExample: '$DEMO_API_KEY' };
  const path = generatedKeysPath(options.dataDir, options.role);
  const names = entries.map(([name]) => name).join(' and ');
  try {
    mkdirSync(options.dataDir, { recursive: true, mode: 0o700 });
    const text = [`# Generated at start by the ${options.role} process; replaced at its next start.`, ...entries.map(([name, , key]) => `${name}=${key}`), ''].join('\n');
    writePrivateFile(path, text);
  } catch (error) {
    // Not printed instead: stdout is a log. The keys stay unknown (harmless, but unusable).
    const reason = error instanceof Error ? error.message : String(error);
    return { lines: [`generated ${names} could not be written to ${path} (${reason}) and are not printed (stdout is not a terminal): set them in the environment`], demoKeyInExample: '$DEMO_API_KEY' };
  }
  return {
    lines: [`generated ${names} written to ${path} (mode 0600; not printed: stdout is not a terminal). \`. '${path}'\` sets them in a shell.`],
    demoKeyInExample: '$DEMO_API_KEY',
  };
}
