// Which MySQL server the tests create their databases on, chosen once per process and logged
// once: MYSQL_URL when set; else a throwaway MySQL container started with testcontainers when a
// Docker engine is reachable; else the local server on 127.0.0.1:3306 (the MariaDB that the
// machine and CI have).

/** The local server the tests use when MYSQL_URL is unset and no Docker engine is reachable. */
export const LOCAL_MYSQL_URL = 'mysql://root@127.0.0.1:3306';
/** The image the container runs: the MySQL that docker-compose.yml serves with. */
export const CONTAINER_IMAGE = 'mysql:8.0';

export type TestMysqlSource = 'MYSQL_URL' | 'testcontainers' | 'local';

export interface TestMysql {
  /** `mysql://user:password@host:port`, a user that may create and drop databases. */
  readonly url: string;
  readonly source: TestMysqlSource;
  /** Why this one: for the log line. */
  readonly reason: string;
}

export interface TestMysqlOptions {
  env?: NodeJS.ProcessEnv;
  /** Starts a MySQL container and returns its root URL; throws when Docker is not reachable. */
  startContainer?: () => Promise<string>;
  log?: (line: string) => void;
}

/** Chooses the server as described above and logs the choice; no memo (see `testMysqlUrl`). */
export async function chooseTestMysql(options: TestMysqlOptions = {}): Promise<TestMysql> {
  const env = options.env ?? process.env;
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const choice = await choose(env, options.startContainer ?? startMysqlContainer);
  log(`testkit: MySQL for tests: ${redact(choice.url)} (${choice.source}: ${choice.reason})`);
  return choice;
}

async function choose(
  env: NodeJS.ProcessEnv,
  startContainer: () => Promise<string>,
): Promise<TestMysql> {
  // || rather than ??: an empty MYSQL_URL (as in `MYSQL_URL= pnpm test`) means unset.
  if (env.MYSQL_URL) return { url: env.MYSQL_URL, source: 'MYSQL_URL', reason: 'set' };
  try {
    const url = await startContainer();
    return {
      url,
      source: 'testcontainers',
      reason: `a Docker engine is reachable; ${CONTAINER_IMAGE} started`,
    };
  } catch (error) {
    const why = (error as Error).message.split('\n')[0];
    return { url: LOCAL_MYSQL_URL, source: 'local', reason: `no MySQL container: ${why}` };
  }
}

/** The container for this process; testcontainers' reaper removes it when the process ends. */
async function startMysqlContainer(): Promise<string> {
  // Imported only here: a process that never gets this far loads none of it.
  const { getContainerRuntimeClient } = await import('testcontainers');
  await getContainerRuntimeClient();
  const { MySqlContainer } = await import('@testcontainers/mysql');
  const container = await new MySqlContainer(CONTAINER_IMAGE).start();
  const password = encodeURIComponent(container.getRootPassword());
  return `mysql://root:${password}@${container.getHost()}:${container.getPort()}`;
}

function redact(url: string): string {
  return url.replace(/\/\/([^:/@]*):[^@/]*@/, '//$1:***@');
}

let chosen: Promise<TestMysql> | undefined;

/** The chosen server's URL; chosen (and logged) on the first call in this process. */
export function testMysqlUrl(): Promise<string> {
  chosen ??= chooseTestMysql();
  return chosen.then((choice) => choice.url);
}
