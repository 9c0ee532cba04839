#!/usr/bin/env node
// `node bin/atlas.js …` (the README, older git hooks): the executable is bin/atlas.cjs.
import './atlas.cjs';
