// Progress for tests: the suite's pieces report it, and a test has no terminal to show it on.
import type { Progress } from '../../src/load/progress.js';

export const silentProgress: Progress = { task: () => ({ advance() {}, done() {} }), note() {} };
