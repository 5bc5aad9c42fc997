#!/usr/bin/env node
import { runCli } from "../src/rpc/index.js";
import { buildProgram } from "./cli.js";

/** `teamd`: the owner's program; its commands live in cli.ts. */
await runCli("teamd", buildProgram(), process.argv);
