// Which process on this machine is the MySQL server the bench talks to, so its CPU per operation
// can be read: the pid in the server's own pid file (`@@pid_file`), when the server runs here.
// Asking the server rather than `pidof mariadbd` picks the right one when tests run other
// MariaDB servers on the same machine.
import { readFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { isAbsolute, join } from 'node:path';

/** What the server says about itself: `@@hostname`, `@@pid_file`, `@@datadir`. */
export interface DatabaseIdentity {
  readonly hostname: string;
  readonly pidFile: string;
  readonly dataDir: string;
}

/** The server's pid, or why it cannot be known (a server on another host, an unreadable file). */
export type DatabasePid = { readonly pid: number } | { readonly unknown: string };

export async function localDatabasePid(identity: DatabaseIdentity): Promise<DatabasePid> {
  if (identity.hostname !== hostname()) {
    return { unknown: `MySQL runs on ${identity.hostname}, not this machine` };
  }
  const pidFile = isAbsolute(identity.pidFile)
    ? identity.pidFile
    : join(identity.dataDir, identity.pidFile);
  let pid: number;
  try {
    pid = Number((await readFile(pidFile, 'utf8')).trim());
  } catch (error) {
    return { unknown: `cannot read its pid file: ${(error as Error).message}` };
  }
  if (!Number.isInteger(pid) || pid < 1) return { unknown: `its pid file ${pidFile} holds no pid` };
  const command = await readFile(`/proc/${pid}/comm`, 'utf8').catch(() => '');
  if (!/^(mariadbd|mysqld)$/.test(command.trim())) {
    return { unknown: `its pid file names ${pid}, which is not a running mariadbd or mysqld` };
  }
  return { pid };
}
