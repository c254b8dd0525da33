// `npm run portal:hash-password`: reads a portal administrator's password on standard input and
// prints its scrypt hash for the partners file's `portalAdmins[].passwordScrypt` (docs/portal.md).
// The password is never an argument (it would sit in the shell history and the process list).
import { hashPassword } from '../src/portal/passwords.ts';

const chunks: Buffer[] = [];
for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
const password = Buffer.concat(chunks).toString('utf8').replace(/\r?\n$/, '');
if (password.length < 12) {
  process.stderr.write('the password must have at least 12 characters\n');
  process.exit(1);
}
process.stdout.write(`${await hashPassword(password)}\n`);
