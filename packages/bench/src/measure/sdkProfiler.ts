// `--profile-sdk`: CPU profiles of this process (the SDK and the load loop) while it drives the
// server, one per SDK run, through an in-process inspector session. Profiling only the SDK runs
// keeps the baselines, which run in this process too, out of the profiles.
import { writeFile, mkdir } from 'node:fs/promises';
import { Session } from 'node:inspector/promises';
import { join } from 'node:path';

/** V8 samples every millisecond, as `node --cpu-prof` (the server's profile) does by default. */
const SAMPLING_INTERVAL_US = 1000;

export class SdkProfiler {
  readonly #session = new Session();
  readonly #paths: string[] = [];
  #connected = false;

  /** Profiles go to `directory`, each named `<prefix>-<run>.cpuprofile`. */
  constructor(
    readonly directory: string,
    readonly prefix: string,
  ) {}

  /** The profiles written so far. */
  get paths(): readonly string[] {
    return this.#paths;
  }

  /** Runs `work` under the profiler and writes its profile as `<prefix>-<run>.cpuprofile`. */
  async profile<T>(run: string, work: () => Promise<T>): Promise<T> {
    if (!this.#connected) {
      this.#session.connect();
      this.#connected = true;
      await this.#session.post('Profiler.enable');
      await this.#session.post('Profiler.setSamplingInterval', {
        interval: SAMPLING_INTERVAL_US,
      });
    }
    await this.#session.post('Profiler.start');
    let result: T;
    try {
      result = await work();
    } finally {
      const { profile } = await this.#session.post('Profiler.stop');
      await mkdir(this.directory, { recursive: true });
      const path = join(this.directory, `${this.prefix}-${run}.cpuprofile`);
      await writeFile(path, JSON.stringify(profile));
      this.#paths.push(path);
    }
    return result;
  }

  close(): void {
    if (this.#connected) this.#session.disconnect();
    this.#connected = false;
  }
}
