#!/usr/bin/env node
// Runs the compiled CLI; `pnpm build` produces it.
import '../dist/src/cli.js';
