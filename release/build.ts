#!/usr/bin/env bun
// `npm run build`: compile dist/paseo-host-runtime for this machine.
import { join } from "node:path";
import { ROOT, compile, packageVersion } from "./compile.ts";

const outfile = join(ROOT, "dist/paseo-host-runtime");
await compile(outfile, process.env.PASEO_HOST_RUNTIME_VERSION ?? packageVersion());
console.log(`built ${outfile}`);
