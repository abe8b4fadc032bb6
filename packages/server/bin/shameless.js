#!/usr/bin/env node
// Runs the compiled CLI; `pnpm build` produces it. Before that, Node would answer a new user
// with ERR_MODULE_NOT_FOUND and a stack instead of saying what to run.
try {
  await import('../dist/src/cli.js');
} catch (error) {
  if (error?.code !== 'ERR_MODULE_NOT_FOUND') throw error;
  const missing = String(error.message).split('\n')[0];
  console.error(
    `shameless: the CLI is not built (${missing}).\n` +
      'Run `pnpm build` at the repository root (after `pnpm install`), then run this again.',
  );
  process.exit(1);
}
