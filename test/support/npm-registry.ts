/**
 * Installing Paseo's helper from npm without the public registry: a stand-in of the package
 * `@getpaseo/workspace-helper` of the published shape (bin `paseo-workspace-helper` →
 * `dist/executable.mjs`, which imports a dependency of its own), packed as `npm pack` packs
 * (a gzipped tar of `package/…`), and a stand-in registry on 127.0.0.1 serving it and its
 * dependency the way a registry does: a packument per name, with each version's tarball URL and
 * sha512 integrity, which npm checks.
 */
import type { Server } from "bun";
import { createHash } from "node:crypto";
import { gzip, tar } from "../../release/archive.ts";

export const HELPER_PACKAGE = "@getpaseo/workspace-helper";
/** The stand-in helper's dependency: it supplies the capabilities describe prints. */
export const HELPER_DEPENDENCY = "paseo-helper-standin-capabilities";

/** One package version: its package.json and its packed tarball. */
export interface PackedPackage {
  name: string;
  version: string;
  tarball: Uint8Array;
  manifest: Record<string, unknown>;
}

/** Packs `files` (path → text) and `manifest` (package.json) like `npm pack`. */
export function pack(manifest: { name: string; version: string } & Record<string, unknown>, files: Record<string, string>): PackedPackage {
  const entries = [
    { path: "package/package.json", mode: 0o644, data: Buffer.from(`${JSON.stringify(manifest, null, 2)}\n`) },
    ...Object.entries(files).map(([path, text]) => ({ path: `package/${path}`, mode: 0o644, data: Buffer.from(text) })),
  ];
  return { name: manifest.name, version: manifest.version, manifest, tarball: gzip(tar(entries, 1_700_000_000)) };
}

/** The helper's dependency. */
export function helperDependency(): PackedPackage {
  return pack(
    { name: HELPER_DEPENDENCY, version: "1.0.0", type: "module", main: "index.js" },
    { "index.js": 'export const capabilities = ["files", "watch", "resolve-command"];\n' },
  );
}

/**
 * The helper stand-in: `describe` prints what Paseo's helper prints (its capabilities come from
 * the dependency), anything else `stand-in helper VERSION ARGS`. Its postinstall script would
 * create `postinstallMarker`: the installer must never run it.
 */
export function helperStandIn(version: string, postinstallMarker: string, name = HELPER_PACKAGE): PackedPackage {
  const executable = [
    "#!/usr/bin/env node",
    `import { capabilities } from "${HELPER_DEPENDENCY}";`,
    `if (process.argv[2] === "describe") console.log(JSON.stringify({ protocolVersion: 1, version: 1, capabilities }));`,
    `else console.log(["stand-in helper ${version}", ...process.argv.slice(2)].join(" "));`,
    "",
  ].join("\n");
  return pack(
    {
      name,
      version,
      type: "module",
      bin: { "paseo-workspace-helper": "dist/executable.mjs" },
      engines: { node: ">=20" },
      dependencies: { [HELPER_DEPENDENCY]: "^1.0.0" },
      scripts: { postinstall: `touch ${JSON.stringify(postinstallMarker)}` },
    },
    { "dist/executable.mjs": executable },
  );
}

function integrity(data: Uint8Array): string {
  return `sha512-${createHash("sha512").update(data).digest("base64")}`;
}

export interface NpmRegistry {
  /** The registry URL, for npm_config_registry. */
  url: string;
  /** Paths asked for, decoded. */
  requests: string[];
  stop(): void;
}

/**
 * Serves `packages` as a registry does; the newest version of a name is its `latest` tag. A
 * version in `tampered` is listed with the integrity of other bytes than its tarball's.
 */
export function startRegistry(packages: readonly PackedPackage[], tampered: readonly PackedPackage[] = []): NpmRegistry {
  const requests: string[] = [];
  const byName = new Map<string, PackedPackage[]>();
  for (const one of packages) byName.set(one.name, [...(byName.get(one.name) ?? []), one]);
  const tarballs = new Map(packages.map((one) => [`${one.name.replace("/", "-")}-${one.version}.tgz`, one]));
  let server: Server<undefined>;
  const packument = (name: string) => {
    const versions = byName.get(name)!;
    const entries = versions.map((one) => {
      const listed = tampered.includes(one) ? Buffer.concat([one.tarball, Buffer.from("x")]) : one.tarball;
      const tarball = `http://127.0.0.1:${server.port}/-/${one.name.replace("/", "-")}-${one.version}.tgz`;
      return [one.version, { ...one.manifest, dist: { tarball, integrity: integrity(listed) } }];
    });
    return { name, "dist-tags": { latest: versions.at(-1)!.version }, versions: Object.fromEntries(entries) };
  };
  server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(req) {
      const path = decodeURIComponent(new URL(req.url).pathname);
      requests.push(path);
      const file = /^\/-\/([^/]+)$/.exec(path)?.[1];
      if (file !== undefined && tarballs.has(file)) return new Response(tarballs.get(file)!.tarball);
      const name = path.slice(1);
      if (byName.has(name)) return Response.json(packument(name));
      return Response.json({ error: "not found" }, { status: 404 });
    },
  });
  return { url: `http://127.0.0.1:${server.port}/`, requests, stop: () => server.stop(true) };
}
