// CPU per operation is read from real processes: a child that burns a known amount of its own
// CPU (counted by the child itself, so the load on the machine does not matter) must be charged
// with at least that much, even under a command name that looks like /proc/<pid>/stat's syntax.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { ProcessCpu, clockTicks } from '../src/measure/processCpu.js';

const BURN_MS = 300;

/** Waits for `go` on stdin, spins until it has used BURN_MS of CPU, prints `done`, then idles. */
const BURNER = `
process.title = 'a) b (c';
process.stdout.write('ready\\n');
process.stdin.once('data', () => {
  const start = process.cpuUsage();
  for (;;) {
    const used = process.cpuUsage(start);
    if ((used.user + used.system) / 1000 >= ${BURN_MS}) break;
  }
  process.stdout.write('done\\n');
});
setInterval(() => {}, 1000);
`;

async function line(stream: NodeJS.ReadableStream, expected: string): Promise<void> {
  let seen = '';
  while (!seen.includes(`${expected}\n`)) {
    const [chunk] = (await once(stream, 'data')) as [Buffer];
    seen += chunk.toString();
  }
}

describe('ProcessCpu', () => {
  it('charges a child with the CPU it spent in the window, whatever its command name', async () => {
    const child = spawn(process.execPath, ['-e', BURNER], { stdio: ['pipe', 'pipe', 'inherit'] });
    try {
      await line(child.stdout, 'ready');
      // The parse must skip a command name holding ') ' and ' (' to find utime and stime.
      assert.equal(readFileSync(`/proc/${child.pid}/comm`, 'utf8').trim(), 'a) b (c');
      const ticks = clockTicks();
      const meter = new ProcessCpu({ server: child.pid! }, ticks).meter(['server']);
      meter.open();
      const done = line(child.stdout, 'done');
      child.stdin.write('go\n');
      await done;
      meter.close();
      const perOperation = meter.perOperation(3).server;
      assert.ok(perOperation !== undefined, 'the child has a CPU figure');
      // /proc counts whole ticks: the window may lose up to one at each edge.
      const tickMicros = 1_000_000 / ticks.perSecond;
      assert.ok(
        perOperation * 3 >= BURN_MS * 1000 - 2 * tickMicros,
        `charged ${perOperation * 3} µs for ${BURN_MS} ms of CPU`,
      );
    } finally {
      child.kill();
    }
  });

  it('has no figure for a process that is gone, and none per operation when nothing completed', async () => {
    const child = spawn(process.execPath, ['-e', '']);
    await once(child, 'exit');
    const cpu = new ProcessCpu({ server: child.pid! }, clockTicks());
    assert.equal(cpu.read('server'), undefined);
    assert.equal(cpu.read('mariadb'), undefined, 'no MariaDB pid was given');

    const meter = cpu.meter(['client']);
    meter.open();
    meter.close();
    assert.deepEqual(meter.perOperation(0), {});
  });
});
