/**
 * The Node.js the service runs on: 22.12 or newer, 24 LTS the tested default. The embedded
 * database's driver (better-sqlite3 13) crashes the process on Node 20, so anything that opens a
 * database checks first and stops with a clear error instead. The uploader needs no database and
 * keeps running on Node 20.
 */
export const MINIMUM_NODE = { major: 22, minor: 12 } as const;

/** Thrown before a database is opened on a Node.js that is too old; the CLI exits 2 on it. */
export class UnsupportedNodeError extends Error {
  readonly exitCode = 2;
}

export function isSupportedNode(version: string): boolean {
  const [major = 0, minor = 0] = version.split(".").map(Number);
  return (
    major > MINIMUM_NODE.major || (major === MINIMUM_NODE.major && minor >= MINIMUM_NODE.minor)
  );
}

/** Throws UnsupportedNodeError, saying which Node this is and how to get a supported one. */
export function assertSupportedNode(
  version: string = process.versions.node,
  execPath: string = process.execPath,
): void {
  if (isSupportedNode(version)) return;
  const wanted = `${MINIMUM_NODE.major}.${MINIMUM_NODE.minor}`;
  throw new UnsupportedNodeError(
    [
      `this needs Node.js ${wanted} or newer (24 LTS recommended); it runs on Node.js ${version} (${execPath}).`,
      "In a checkout, npm scripts (`npm start`, `npx mainline …`) use the Node 24 that `npm ci` " +
        "installs into node_modules/.bin; or put one first on PATH: " +
        'export PATH="$(bash scripts/ensure-node.sh):$PATH"; or install Node.js 24 LTS ' +
        "(https://nodejs.org/).",
      "The uploader (`mainline upload`, `mainline test`) runs on Node.js 20 too.",
    ].join("\n"),
  );
}

/**
 * Node's options for a server process: V8 reads them only at start, so they are on its command
 * line (bin/mainline.js's shebang, `npm start`, the tests' and benchmarks' servers). Node 24's
 * young generation is twice Node 20's (32 MiB semi-spaces); at 16 MiB, Node 20's, a server that
 * ingests a 640 MiB failure text stays under its 300 MB peak.
 */
export const SERVE_NODE_ARGS: readonly string[] = ["--max-semi-space-size=16"];
