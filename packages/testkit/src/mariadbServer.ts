import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { accessSync, closeSync, constants as fsConstants, openSync } from 'node:fs';
import { cp, mkdir, mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir, userInfo } from 'node:os';
import { delimiter, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { createConnection, type RowDataPacket } from 'mysql2/promise';
import { cleanUpOnExit } from './cleanupOnExit.js';
import { freePort } from './freePort.js';

export interface MariaDbServerOptions {
  /** TCP port on 127.0.0.1; a free one is picked when omitted. */
  port?: number;
  /** How long `start()` waits for the server to accept a root login. Default 30 s. */
  startTimeoutMs?: number;
  /** How long `stop()` waits after SIGTERM before resorting to SIGKILL. Default 30 s. */
  stopTimeoutMs?: number;
  /** Appended to the mariadbd command line, e.g. `['--max-connections=20']`. */
  extraArgs?: string[];
  /**
   * Appended after `extraArgs` on the first start only: for what must not be repeated when the
   * server is started again, like Galera's `--wsrep-new-cluster` (a restarted node rejoins).
   */
  firstStartArgs?: string[];
  /**
   * The system user mariadbd runs as when the test run is root; its directory is handed over to
   * that user first. Galera nodes need `mysql`: rsync state transfer drops to `nobody` when run
   * as root. By default a root test run keeps mariadbd as root (`--user=root`).
   */
  user?: string;
  /** Defaults to `mariadbd` found on PATH or in the usual sbin directories. */
  mariadbdPath?: string;
  /** Defaults to `mariadb-install-db` found on PATH or in the usual bin directories. */
  installDbPath?: string;
}

/** A throwaway MariaDB server process owned by the test run. */
export interface MariaDbServer {
  readonly port: number;
  /** `mysql://root@127.0.0.1:<port>`: root, empty password, like the main test server. */
  readonly url: string;
  /** Survives `stop()`/`kill()` followed by `start()`, so durability can be tested. */
  readonly dataDir: string;
  /** mariadbd's stdout and stderr, across all starts. */
  readonly logFile: string;
  readonly running: boolean;
  /** Starts the server again on the same port and data directory; rejects if already running. */
  start(): Promise<void>;
  /** SIGTERM (a clean shutdown) and wait for the process to exit. No-op when not running. */
  stop(): Promise<void>;
  /** SIGKILL (a crash: InnoDB recovers on the next start) and wait for exit. No-op when not running. */
  kill(): Promise<void>;
  /**
   * SIGSTOP: the server hangs, its connections open and its port listening, answering nothing
   * (a server that froze, or a network that drops its packets), until `resume()`. Resolves once
   * every thread of it has stopped: a thread running on another core when the signal is sent
   * stops only when it next enters the kernel, and could answer a query sent in between.
   */
  pause(): Promise<void>;
  /** SIGCONT after `pause()`: it answers again. */
  resume(): void;
  /** Kill the server and remove its data directory. The handle is unusable afterwards. */
  destroy(): Promise<void>;
}

const DEFAULT_START_TIMEOUT_MS = 30_000;
const DEFAULT_STOP_TIMEOUT_MS = 30_000;
const READINESS_POLL_INTERVAL_MS = 25;
const PORT_IN_USE_RETRIES = 3;
const LOG_TAIL_LINES = 40;

// Shared by mariadb-install-db (which passes them on to its bootstrap server) and mariadbd, so
// that the redo log created at install time already has the size the server expects.
const SMALL_FOOTPRINT_ARGS = ['--innodb-buffer-pool-size=64M', '--innodb-log-file-size=8M'];

const SERVER_ARGS = [
  ...SMALL_FOOTPRINT_ARGS,
  '--bind-address=127.0.0.1',
  // Same as the main test server: without it, root@127.0.0.1 would be matched via a reverse lookup.
  '--skip-name-resolve',
  '--character-set-server=utf8mb4',
  '--collation-server=utf8mb4_general_ci',
  // The default 12 MiB temporary tablespace is written out in full on every start.
  '--innodb-temp-data-file-path=ibtmp1:1M:autoextend',
  '--innodb-buffer-pool-dump-at-shutdown=OFF',
  '--innodb-buffer-pool-load-at-startup=OFF',
];

/**
 * Launches a private MariaDB server with a fresh data directory, for tests that need a second
 * partition host or need to stop, crash and restart a database.
 */
export async function startMariaDbServer(
  options: MariaDbServerOptions = {},
): Promise<MariaDbServer> {
  const mariadbd = options.mariadbdPath ?? findExecutable('mariadbd');
  const installDb = options.installDbPath ?? findExecutable('mariadb-install-db');
  const baseDir = await mkdtemp(join(tmpdir(), 'shameless-mariadb-'));
  const releaseBaseDir = cleanUpOnExit({ dir: baseDir });
  try {
    const dataDir = join(baseDir, 'data');
    await copyDirectory(await pristineDataDir(installDb), dataDir);
    await mkdir(join(baseDir, 'tmp'));
    if (options.user !== undefined) {
      await handOver(baseDir, options.user);
    }
    const server = new ThrowawayMariaDb(
      mariadbd,
      baseDir,
      releaseBaseDir,
      options.port ?? (await freePort()),
      options,
    );
    for (let attempt = 1; ; attempt++) {
      try {
        await server.start();
        return server;
      } catch (error) {
        // freePort() cannot reserve the port, so another process may have taken it meanwhile.
        const mayRetry = options.port === undefined && attempt < PORT_IN_USE_RETRIES;
        if (!(error instanceof PortInUseError && mayRetry)) {
          // A failed start leaves no process behind, so removing the directory is all that's left.
          throw error;
        }
        server.moveToPort(await freePort());
      }
    }
  } catch (error) {
    await rm(baseDir, { recursive: true, force: true });
    releaseBaseDir();
    throw error;
  }
}

class PortInUseError extends Error {}

class ThrowawayMariaDb implements MariaDbServer {
  readonly dataDir: string;
  readonly logFile: string;
  private currentPort: number;
  private child: ChildProcess | undefined;
  private starts = 0;
  private exited: Promise<void> = Promise.resolve();
  private destroyed = false;
  // start/stop/kill/destroy run one at a time, so e.g. a stop() issued during start() is well defined.
  private lastOperation: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly mariadbdPath: string,
    private readonly baseDir: string,
    private readonly releaseBaseDir: () => void,
    port: number,
    private readonly options: MariaDbServerOptions,
  ) {
    this.dataDir = join(baseDir, 'data');
    this.logFile = join(baseDir, 'mariadbd.log');
    this.currentPort = port;
  }

  private get socketPath(): string {
    return join(this.baseDir, 'mysqld.sock');
  }

  get port(): number {
    return this.currentPort;
  }

  get url(): string {
    return `mysql://root@127.0.0.1:${this.currentPort}`;
  }

  get running(): boolean {
    return this.child !== undefined;
  }

  moveToPort(port: number): void {
    this.currentPort = port;
  }

  start(): Promise<void> {
    return this.serialize(() => this.doStart());
  }

  stop(): Promise<void> {
    return this.serialize(() => this.terminate('SIGTERM'));
  }

  kill(): Promise<void> {
    return this.serialize(() => this.terminate('SIGKILL'));
  }

  async pause(): Promise<void> {
    const pid = this.child?.pid;
    if (pid === undefined) return;
    this.child!.kill('SIGSTOP');
    const started = Date.now();
    while (!(await allThreadsStopped(pid))) {
      if (Date.now() - started > 5_000) throw new Error(`mariadbd ${pid} did not stop within 5 s`);
      await sleep(1);
    }
  }

  resume(): void {
    this.child?.kill('SIGCONT');
  }

  destroy(): Promise<void> {
    return this.serialize(async () => {
      if (this.destroyed) {
        return;
      }
      // The data is about to be deleted, so there is nothing a clean shutdown could preserve.
      await this.terminate('SIGKILL');
      this.destroyed = true;
      await rm(this.baseDir, { recursive: true, force: true, maxRetries: 3 });
      this.releaseBaseDir();
    });
  }

  private serialize<T>(operation: () => Promise<T>): Promise<T> {
    const result = this.lastOperation.then(operation, operation);
    this.lastOperation = result.catch(() => {});
    return result;
  }

  private async doStart(): Promise<void> {
    if (this.destroyed) {
      throw new Error('this MariaDB server has been destroyed');
    }
    if (this.child !== undefined) {
      throw new Error(`MariaDB on port ${this.port} is already running`);
    }
    const logOffset = await fileSize(this.logFile);
    const log = openSync(this.logFile, 'a');
    let child: ChildProcess;
    try {
      const args = this.serverArgs(this.starts === 0);
      child = spawn(this.mariadbdPath, args, { stdio: ['ignore', log, log] });
      this.starts++;
    } finally {
      closeSync(log);
    }
    // A test run that forgets destroy() must still be able to exit; the exit cleanup kills us.
    child.unref();
    const releaseChild = cleanUpOnExit({ child });
    let exitDescription = '';
    this.child = child;
    this.exited = new Promise((resolve) => {
      const onGone = (description: string) => {
        exitDescription ||= description;
        releaseChild();
        if (this.child === child) {
          this.child = undefined;
        }
        resolve();
      };
      child.once('exit', (code, signal) => onGone(`exited with ${signal ?? `code ${code}`}`));
      child.once('error', (error) => onGone(`could not be run: ${error.message}`));
    });

    const deadline = Date.now() + (this.options.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS);
    for (;;) {
      if (this.child !== child) {
        const logTail = await this.logTail(logOffset);
        const message = `mariadbd ${exitDescription} before accepting connections on port ${this.port}`;
        const ErrorType = /address already in use/i.test(logTail) ? PortInUseError : Error;
        throw new ErrorType(`${message}\n${logTail}`);
      }
      if (Date.now() > deadline) {
        await this.terminate('SIGKILL');
        throw new Error(
          `mariadbd did not accept a root connection on port ${this.port} within ` +
            `${this.options.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS} ms\n` +
            (await this.logTail(logOffset)),
        );
      }
      if (await this.acceptsRootLoginAsItself()) {
        return;
      }
      await sleep(READINESS_POLL_INTERVAL_MS);
    }
  }

  private serverArgs(firstStart: boolean): string[] {
    const user = this.options.user ?? (isRoot() ? 'root' : undefined);
    return [
      // Must come first; keeps the machine's my.cnf (and its socket, port, datadir) out of it.
      '--no-defaults',
      // mariadbd refuses to run as root unless told which user to be.
      ...(user !== undefined ? [`--user=${user}`] : []),
      `--datadir=${this.dataDir}`,
      `--port=${this.port}`,
      // An explicit socket and pid file, or it would fight the system server over /run/mysqld.
      `--socket=${this.socketPath}`,
      `--pid-file=${join(this.baseDir, 'mysqld.pid')}`,
      // A temporary directory of its own: at start mariadbd deletes every #sql* file in its
      // tmpdir, which in /tmp are the live temporary tables of the machine's own server (a test
      // there failed "Error on delete of '/tmp/#sql-temptable-…'" as a throwaway server started).
      `--tmpdir=${join(this.baseDir, 'tmp')}`,
      ...SERVER_ARGS,
      ...(this.options.extraArgs ?? []),
      ...(firstStart ? (this.options.firstStartArgs ?? []) : []),
    ];
  }

  /** Whether a root login works on our port and reaches this server, not another one there. */
  private async acceptsRootLoginAsItself(): Promise<boolean> {
    try {
      const connection = await createConnection({
        host: '127.0.0.1',
        port: this.port,
        user: 'root',
        password: '',
        connectTimeout: 2_000,
      });
      try {
        const [rows] = await connection.query<RowDataPacket[]>('SELECT @@socket AS socket');
        return rows[0]?.socket === this.socketPath;
      } finally {
        connection.destroy();
      }
    } catch {
      return false;
    }
  }

  private async terminate(signal: 'SIGTERM' | 'SIGKILL'): Promise<void> {
    const child = this.child;
    if (child === undefined) {
      return;
    }
    // Otherwise a caller awaiting only this exit (e.g. a script's top-level await) would find the
    // event loop empty and Node would quit before the process is gone.
    child.ref();
    child.kill(signal);
    if (signal === 'SIGTERM') {
      // A paused server acts on the signal once continued.
      child.kill('SIGCONT');
      const stopTimeoutMs = this.options.stopTimeoutMs ?? DEFAULT_STOP_TIMEOUT_MS;
      const timedOut = Symbol('timed out');
      const timer = sleep(stopTimeoutMs, timedOut, { ref: false });
      if ((await Promise.race([this.exited, timer])) === timedOut) {
        child.kill('SIGKILL');
      }
    }
    await this.exited;
  }

  private logTail(fromOffset: number): Promise<string> {
    return readLogTail(this.logFile, fromOffset);
  }
}

/**
 * The last lines a server wrote to `logFile` (since `fromOffset`), headed by the file's name, for
 * an error message; never throws.
 */
export async function readLogTail(
  logFile: string,
  fromOffset = 0,
  lineCount = LOG_TAIL_LINES,
): Promise<string> {
  try {
    const log = (await readFile(logFile)).subarray(fromOffset).toString('utf8');
    const lines = log.trimEnd().split('\n').slice(-lineCount);
    return `--- last ${lines.length} lines of ${logFile} ---\n${lines.join('\n')}`;
  } catch (error) {
    return `(could not read ${logFile}: ${String(error)})`;
  }
}

let pristineDataDirPromise: Promise<string> | undefined;

/**
 * mariadb-install-db takes 0.5-1 s here while copying its result takes 30-200 ms, so every server
 * in a process starts from a copy of one installation.
 */
function pristineDataDir(installDbPath: string): Promise<string> {
  pristineDataDirPromise ??= installDataDir(installDbPath).catch((error: unknown) => {
    pristineDataDirPromise = undefined;
    throw error;
  });
  return pristineDataDirPromise;
}

async function installDataDir(installDbPath: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'shameless-mariadb-pristine-'));
  // Never released: the copy source is wanted until the process ends.
  cleanUpOnExit({ dir });
  const dataDir = join(dir, 'data');
  // The bootstrap server's own tmpdir, for the reason serverArgs gives.
  await mkdir(join(dir, 'tmp'));
  const args = [
    '--no-defaults',
    `--tmpdir=${join(dir, 'tmp')}`,
    // Root with an empty password over TCP, like the main test server; the default
    // (unix_socket for root) would make TCP logins as root impossible.
    '--auth-root-authentication-method=normal',
    '--skip-test-db',
    `--datadir=${dataDir}`,
    `--user=${isRoot() ? 'root' : userInfo().username}`,
    ...SMALL_FOOTPRINT_ARGS,
  ];
  try {
    await promisify(execFile)(installDbPath, args, { maxBuffer: 16 * 1024 * 1024 });
  } catch (error) {
    const output = error instanceof Error && 'stderr' in error ? String(error.stderr) : '';
    throw new Error(`${installDbPath} ${args.join(' ')} failed: ${String(error)}\n${output}`);
  }
  return dataDir;
}

async function copyDirectory(from: string, to: string): Promise<void> {
  try {
    // 30-200 ms for a fresh data directory here; fs.cp() is several times slower.
    await promisify(execFile)('cp', ['-a', from, to]);
  } catch {
    await rm(to, { recursive: true, force: true });
    await cp(from, to, { recursive: true });
  }
}

/** Gives `user` the server's directory: mariadbd drops to it before touching any file. */
async function handOver(dir: string, user: string): Promise<void> {
  if (!isRoot() && user !== userInfo().username) {
    throw new Error(`mariadbd can run as ${user} only when the tests run as root`);
  }
  try {
    await promisify(execFile)('chown', ['-R', `${user}:`, dir]);
  } catch (error) {
    const output = error instanceof Error && 'stderr' in error ? String(error.stderr) : '';
    throw new Error(`cannot hand ${dir} over to the user ${user}: ${String(error)}\n${output}`);
  }
}

function isRoot(): boolean {
  return process.getuid?.() === 0;
}

// Non-root users often lack the sbin directories, where Debian puts mariadbd, on their PATH.
const EXTRA_SEARCH_DIRS = ['/usr/sbin', '/usr/local/sbin', '/usr/bin', '/usr/local/bin'];

export function findExecutable(name: string): string {
  const searchDirs = [...(process.env.PATH ?? '').split(delimiter), ...EXTRA_SEARCH_DIRS];
  for (const dir of searchDirs.filter((entry) => entry !== '')) {
    const candidate = join(dir, name);
    try {
      accessSync(candidate, fsConstants.X_OK);
      return candidate;
    } catch {
      // Not here; keep looking.
    }
  }
  throw new Error(`cannot find ${name} on PATH or in ${EXTRA_SEARCH_DIRS.join(', ')}`);
}

async function fileSize(path: string): Promise<number> {
  try {
    return (await stat(path)).size;
  } catch {
    return 0;
  }
}

/** Whether every thread of process `pid` is stopped (state T in /proc), or it is gone. */
async function allThreadsStopped(pid: number): Promise<boolean> {
  try {
    const tasks = await readdir(`/proc/${pid}/task`);
    for (const task of tasks) {
      const stat = await readFile(`/proc/${pid}/task/${task}/stat`, 'utf8');
      // The state follows the command's closing parenthesis.
      if (stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'T') return false;
    }
    return true;
  } catch {
    return true;
  }
}
