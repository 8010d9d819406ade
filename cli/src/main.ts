#!/usr/bin/env node
// notifyctl: the operator's tool for plans, organizations, projects, API keys, templates and messages (see `notifyctl help`).
import { run } from './cli.ts';

process.exitCode = await run(
  process.argv.slice(2),
  { stdout: (text) => void process.stdout.write(text), stderr: (text) => void process.stderr.write(text) },
  process.env,
);
