// The SDK as another team gets it: `pnpm pack` of @shameless/proto and @shameless/client, then
// `npm install` of the two tarballs into a fresh project outside the repository (third-party
// dependencies come from the npm registry), then a TypeScript program there, type-checked
// against the shipped declarations and run against a real `shameless serve`.
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { createTestDatabases, type TestDatabases } from '@shameless/testkit';
import { startServeProcess, type ServeProcess } from './support/serveProcess.js';

const execFileAsync = promisify(execFile);

/** Runs a command; a failure carries what it printed, so a broken install or type error shows. */
async function run(
  command: string,
  args: readonly string[],
  options: { cwd?: string } = {},
): Promise<{ stdout: string; stderr: string }> {
  try {
    return await execFileAsync(command, args, { ...options, maxBuffer: 64 * 1024 * 1024 });
  } catch (error) {
    const { stdout, stderr } = error as { stdout?: string; stderr?: string };
    throw new Error(`${command} ${args.join(' ')} failed:\n${stdout ?? ''}${stderr ?? ''}`);
  }
}
const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../../../..');
const tsc = join(repoRoot, 'node_modules/typescript/bin/tsc');

const PROGRAM = `import { connect, NotFoundError } from '@shameless/client';
import { StoreService } from '@shameless/proto';

const store = await connect({ endpoints: [process.argv[2]!], deadlineMs: 10_000 });
const Note = await store.defineModel({
  name: 'packed_note',
  primary: { fields: { account: 'integer', title: 'string' }, shardOn: 'account' },
  cells: ['tags'],
});
const note = await Note.put({ account: 7, title: 'hello', text: 'installed from a tarball' });
const found = await Note.where({ account: 7, title: 'hello' }).toArray();
console.log(
  JSON.stringify({
    shards: store.shardsCount,
    uuid: note.uuid,
    found: found.map((record) => record.get('text')),
    services: Object.keys(StoreService).length > 0,
    notFound: typeof NotFoundError,
  }),
);
await store.close();
`;

// The documented ways in from CommonJS: a dynamic import of the ESM-only package, and (Node
// 20.19+) require() of it.
const COMMONJS_PROGRAM = `async function main() {
  const { connect } = await import('@shameless/client');
  console.log(typeof connect, typeof require('@shameless/client').connect);
}
main();
`;

const TSCONFIG = {
  compilerOptions: {
    target: 'ES2022',
    module: 'NodeNext',
    moduleResolution: 'NodeNext',
    strict: true,
    noUncheckedIndexedAccess: true,
    outDir: 'out',
    types: [],
    skipLibCheck: false,
  },
  include: ['program.ts'],
};

async function pack(packageDir: string, destination: string): Promise<string> {
  await run('pnpm', ['pack', '--pack-destination', destination], { cwd: packageDir });
  const name = JSON.parse(await readFile(join(packageDir, 'package.json'), 'utf8')) as {
    name: string;
    version: string;
  };
  return join(destination, `${name.name.replace('@', '').replace('/', '-')}-${name.version}.tgz`);
}

async function tarballFiles(tarball: string): Promise<string[]> {
  const { stdout } = await run('tar', ['tzf', tarball]);
  return stdout
    .split('\n')
    .filter(Boolean)
    .map((path) => path.replace(/^package\//, ''));
}

describe('the packed SDK installed into a fresh project', function () {
  this.timeout(300_000);
  let workDir: string;
  let tarballs: { proto: string; client: string };
  let databases: TestDatabases;
  let server: ServeProcess;

  before(async () => {
    workDir = await mkdtemp(join(tmpdir(), 'shameless-consumer-'));
    tarballs = {
      proto: await pack(join(repoRoot, 'packages/proto'), workDir),
      client: await pack(join(repoRoot, 'packages/client'), workDir),
    };
    databases = await createTestDatabases(1);
    server = await startServeProcess(['--partition', databases.urls[0]!, '--shards-count', '4']);
  });
  after(async () => {
    await server?.kill('SIGTERM');
    await databases?.drop();
    if (workDir) await rm(workDir, { recursive: true, force: true });
  });

  it('ships code, declarations, README, LICENSE and the .proto files; no tests or build state', async () => {
    for (const tarball of Object.values(tarballs)) {
      const files = await tarballFiles(tarball);
      expect(files).to.include.members(['package.json', 'README.md', 'LICENSE']);
      expect(files.filter((path) => /(^|\/)test\/|\.test\.|tsbuildinfo/.test(path))).to.deep.equal(
        [],
      );
      // Every source map points at a source that ships with it.
      for (const map of files.filter((path) => path.endsWith('.js.map'))) {
        const { stdout } = await run('tar', ['xzf', tarball, '-O', `package/${map}`]);
        for (const source of (JSON.parse(stdout) as { sources: string[] }).sources) {
          expect(files, `${map} -> ${source}`).to.include(join(dirname(map), source));
        }
      }
      const { stdout } = await run('tar', ['xzf', tarball, '-O', 'package/package.json']);
      const manifest = JSON.parse(stdout) as {
        private?: boolean;
        dependencies: Record<string, string>;
      };
      expect(manifest.private).to.equal(undefined);
      expect(Object.values(manifest.dependencies).join(' ')).not.to.include('workspace:');
    }
    const protoFiles = await tarballFiles(tarballs.proto);
    const shipped = protoFiles.filter((path) => path.endsWith('.proto')).sort();
    const inRepo = (await readdir(join(repoRoot, 'proto/shameless/v1'))).map(
      (name) => `proto/shameless/v1/${name}`,
    );
    expect(shipped).to.deep.equal(inRepo.sort());
  });

  it('installs with npm, type-checks, connects, defines a model, puts and finds', async () => {
    const project = join(workDir, 'consumer');
    await run('mkdir', ['-p', project]);
    await writeFile(
      join(project, 'package.json'),
      JSON.stringify({ name: 'consumer', private: true, type: 'module' }),
    );
    await run(
      'npm',
      ['install', '--no-audit', '--no-fund', '--loglevel=error', tarballs.proto, tarballs.client],
      { cwd: project },
    );
    await writeFile(join(project, 'program.ts'), PROGRAM);
    await writeFile(join(project, 'tsconfig.json'), JSON.stringify(TSCONFIG));
    await run(process.execPath, [tsc, '-p', project], { cwd: project });

    const { stdout } = await run(process.execPath, ['out/program.js', server.address], {
      cwd: project,
    });
    const result = JSON.parse(stdout) as {
      shards: number;
      uuid: string;
      found: unknown[];
      services: boolean;
      notFound: string;
    };
    expect(result.shards).to.equal(4);
    expect(result.uuid).to.match(/^[0-9a-f-]{36}$/);
    expect(result.found).to.deep.equal(['installed from a tarball']);
    expect(result.services).to.equal(true);
    expect(result.notFound).to.equal('function');

    await writeFile(join(project, 'commonjs.cjs'), COMMONJS_PROGRAM);
    const commonjs = await run(process.execPath, ['commonjs.cjs'], { cwd: project });
    expect(commonjs.stdout.trim()).to.equal('function function');
  });
});
