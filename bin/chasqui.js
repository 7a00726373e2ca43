#!/usr/bin/env node
// The `chasqui` command: runs the compiled CLI (npm start builds it first).
import('../dist/cli/main.js');
