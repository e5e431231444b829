import type { TestProject } from "vitest/node";
import { openStore, redactUrl } from "../../src/store/index.js";
import {
  configuredServerUrl,
  SERVER_NAMES,
  SERVER_URL_VARIABLES,
  type ServerKind,
  type TestServers,
} from "../../src/store/testing.js";
import { type PgliteServer, startPgliteServer } from "./pglite.js";

/**
 * Vitest global setup: finds the Redis and PostgreSQL servers once per run and tells the
 * tests (`inject("testServers")`, read by src/store/testing.ts). Nothing but Node is needed:
 * without PostgreSQL the tests run on PGlite, a real Postgres engine compiled to WASM,
 * served over the wire protocol (./pglite.ts); without Redis, for which npm has no such
 * engine, its tests are skipped and the summary says so (./services-reporter.ts).
 * SWITCHBOARD_TEST_SERVICES=required (CI) turns a missing server into a failure instead.
 */

/** Undefined when a store opens at `url`, else why not. */
async function unreachable(url: string): Promise<string | undefined> {
  try {
    const store = await openStore(url, { namespace: "switchboard-test-probe" });
    await store.close();
    return undefined;
  } catch (err) {
    const cause = err instanceof Error && err.cause instanceof Error ? err.cause : err;
    const code = (cause as { code?: unknown } | undefined)?.code;
    if (code === "ECONNREFUSED") return `nothing answers at ${redactUrl(url)}`;
    return `${redactUrl(url)} fails: ${cause instanceof Error ? cause.message : String(cause)}`;
  }
}

function servicesRequired(): boolean {
  const value = process.env.SWITCHBOARD_TEST_SERVICES;
  if (!value) return false;
  if (value === "required") return true;
  throw new Error(`SWITCHBOARD_TEST_SERVICES is "${value}"; set it to "required" or leave it unset.`);
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const required = servicesRequired();
  const redisUrl = configuredServerUrl("redis");
  const postgresUrl = configuredServerUrl("postgres");
  const [redisMissing, postgresMissing] = await Promise.all([
    unreachable(redisUrl),
    unreachable(postgresUrl),
  ]);
  const missing = { redis: redisMissing, postgres: postgresMissing };

  if (required) {
    const absent = (Object.keys(missing) as ServerKind[]).filter((kind) => missing[kind]);
    if (absent.length > 0) {
      const what = absent.map((kind) => `${SERVER_NAMES[kind]} is missing (${missing[kind]})`).join(" and ");
      const variables = absent.map((kind) => SERVER_URL_VARIABLES[kind]).join(" and ");
      const fix =
        absent.length === 1
          ? `Start it, or set ${variables} to a server that answers.`
          : `Start them, or set ${variables} to servers that answer.`;
      throw new Error(`SWITCHBOARD_TEST_SERVICES=required, but ${what}. ${fix}`);
    }
  }

  const servers: TestServers = {
    redis: { url: redisUrl, missing: redisMissing },
    postgres: { url: postgresUrl },
  };
  let pglite: PgliteServer | undefined;
  if (postgresMissing) {
    pglite = await startPgliteServer();
    servers.postgres = { url: pglite.url, embedded: postgresMissing };
  }
  project.provide("testServers", servers);
  return async () => {
    await pglite?.stop();
  };
}
