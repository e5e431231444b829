import type { Reporter, TestModule, Vitest } from "vitest/node";
import { SERVER_NAMES, SERVER_URL_VARIABLES, type ServerKind } from "../../src/store/testing.js";

const START: Record<ServerKind, string> = { redis: "start redis-server", postgres: "start PostgreSQL" };

/**
 * Says at the end of the run which tests were skipped for want of a server (the global
 * setup, test/support/services.ts, found it missing) and whether PostgreSQL was PGlite.
 * Runs beside the default reporter, after its summary.
 */
export default class ServicesReporter implements Reporter {
  private vitest?: Vitest;

  onInit(vitest: Vitest): void {
    this.vitest = vitest;
  }

  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    const vitest = this.vitest;
    const servers = vitest?.getRootProject().getProvidedContext().testServers;
    if (!vitest || !servers) return;
    const lines: string[] = [];
    for (const kind of Object.keys(servers) as ServerKind[]) {
      const { missing, embedded } = servers[kind];
      if (embedded) {
        lines.push(
          `Tests that need PostgreSQL ran on embedded PGlite (${embedded}); start PostgreSQL or set TEST_POSTGRES_URL to run them on a server.`,
        );
      }
      if (!missing) continue;
      const skipped = testModules
        .flatMap((m) => [...m.children.allTests("skipped")])
        .filter((t) => t.tags.includes(kind)).length;
      if (skipped === 0) continue;
      const tests = skipped === 1 ? "test" : "tests";
      lines.push(
        `Skipped ${skipped} ${tests} that need ${SERVER_NAMES[kind]} (${missing}): ${START[kind]} or set ${SERVER_URL_VARIABLES[kind]} to run them.`,
      );
    }
    if (lines.length > 0) vitest.logger.log(`\n${lines.join("\n")}\n`);
  }
}
