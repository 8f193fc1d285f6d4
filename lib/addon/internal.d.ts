// Types of `@norskvideo/ctl-migration/internal/addon` (lib/addon/internal.js): the loading rules
// (and the value rules) the testing package shares with the client. Not an API for products.

/** The platform this process needs a prebuilt binary for, as the npm/<platform> packages spell it
 *  (`linux-x64-gnu`, `darwin-arm64`, `win32-x64-msvc`…). */
export declare function hostPlatform(): string

/** The runtime, for error messages: `Node.js v22.12.0`, `Bun 1.2.0`, `Deno 2.1.0`. */
export declare function runtimeName(): string

/** The messages of failed loads that found a file and could not load it. */
export declare function failedLoads(messages: string[]): string[]

/** `load()` run on the first call only; what it returned, or threw, is what every call gets. */
export declare function once<T>(load: () => T): () => T

/** Which package to find, and from where. */
export interface InstalledPackage {
  /** The package's name. */
  name: string
  /** The version of the running JavaScript (in a bundle, its inlined package.json's). */
  version: string
  /** A file of the package's lib/addon/, by which an installed copy is known. */
  marker: string
  /** The calling module's file (`__filename`; in a bundle, the bundle's). */
  filename: string | undefined
}

/** `require` as from lib/addon/ of the installed copy of a package: the calling module's own
 *  directory when it is that, else found from the bundle's file or the entry script (never the
 *  working directory). On the first call; a failure (`ERR_CTL_MIGRATION_BUNDLED`) is remembered. */
export declare function installedRequire(pkg: InstalledPackage): () => (id: string) => unknown

/** `String(e)`, or undefined when even that throws. */
export declare function describe(e: unknown): string | undefined

/** What JSON.stringify makes of a payload; a top-level value it drops becomes `null` (D2). */
export declare function payloadJson(payload: unknown): string

/** A recording's path to a field, one step further: `.key`, `["odd key"]` or `[2]`; from the
 *  top (`''`), `key`. */
export declare function pathStep(path: string, key: string | number): string

/** A recording's path (`payload.list[2]`) as its keys and indexes, or undefined for text that is
 *  not a path as the recorder writes one. */
export declare function pathKeys(text: string): (string | number)[] | undefined
