// Which local addresses a TCP port is listening on, as the kernel reports it (/proc/net/tcp and
// tcp6, Linux: the only platform the service runs on). Tests use it to check what a server really
// bound, not what its configuration says it asked for.
import { readFileSync } from 'node:fs';

const listenState = '0A';

function ipv4(hex: string): string {
  // Four bytes in host (little-endian) order.
  const bytes = Buffer.from(hex, 'hex').reverse();
  return [...bytes].join('.');
}

function ipv6(hex: string): string {
  // Four 32-bit words, each in host order.
  const words = [0, 1, 2, 3].map((index) => Buffer.from(hex.slice(index * 8, index * 8 + 8), 'hex').reverse());
  const bytes = Buffer.concat(words);
  const groups: string[] = [];
  for (let offset = 0; offset < 16; offset += 2) groups.push(bytes.readUInt16BE(offset).toString(16));
  return groups.join(':').replace(/(^|:)0(:0)+(:|$)/, '::');
}

function listeners(file: string, decode: (hex: string) => string, port: number): string[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return [];
  }
  const found: string[] = [];
  for (const line of text.split('\n').slice(1)) {
    const fields = line.trim().split(/\s+/);
    const local = fields[1];
    if (local === undefined || fields[3] !== listenState) continue;
    const [addressHex, portHex] = local.split(':');
    if (addressHex === undefined || portHex === undefined || Number.parseInt(portHex, 16) !== port) continue;
    found.push(decode(addressHex));
  }
  return found;
}

/** The addresses listening on `port` (e.g. ['127.0.0.1'], or ['0.0.0.0'] / ['::'] for every interface). */
export function listeningAddresses(port: number): string[] {
  return [...listeners('/proc/net/tcp', ipv4, port), ...listeners('/proc/net/tcp6', ipv6, port)].sort();
}
