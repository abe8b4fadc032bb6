// The one-shot `secrets` service of docker-compose.yml: on the first start it makes a MySQL root
// password and an admin token, and a tokens file holding the token's SHA-256, in the secrets
// volume; later starts keep what is there (so an edited tokens file survives). It says where the
// token is, never the token.
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const dir = process.argv[2] ?? '/secrets';
mkdirSync(dir, { recursive: true, mode: 0o755 });
const at = (name) => join(dir, name);

/** Writes the file unless it exists; both the MySQL and the server containers read it. */
function keep(name, make) {
  if (existsSync(at(name))) return false;
  writeFileSync(at(name), make(), { mode: 0o644 });
  return true;
}

keep(
  'mysql-password',
  () => process.env.SHAMELESS_MYSQL_PASSWORD || randomBytes(24).toString('hex'),
);
const madeToken = keep('admin.token', () => randomBytes(32).toString('base64url'));
keep('tokens.json', () => {
  const token = readFileSync(at('admin.token'), 'utf8').trim();
  const sha256 = createHash('sha256').update(token).digest('hex');
  return `${JSON.stringify({ tokens: [{ name: 'admin', role: 'admin', sha256 }] }, null, 2)}\n`;
});
console.log(
  `${madeToken ? 'made' : 'kept'} the admin token; read it with: ` +
    'docker compose run --rm secrets cat /secrets/admin.token',
);
