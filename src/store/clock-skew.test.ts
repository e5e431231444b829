import { afterEach, describe, expect, it } from "vitest";
import { clockSkewMs, skewWarning } from "./clock-skew.js";
import { needsServer, type TestStores, testStores } from "./testing.js";

describe("this machine's clock against PostgreSQL's", needsServer("postgres"), () => {
  let stores: TestStores | undefined;
  afterEach(async () => {
    await stores?.dispose();
  });

  it("measures how far this clock strays, and warns past half a second", async () => {
    stores = testStores("postgres");
    const store = await stores.open();
    const agreed = await clockSkewMs(store);
    // The same machine: the two clocks agree to within the round trip.
    expect(Math.abs(agreed ?? Number.NaN)).toBeLessThan(250);
    expect(skewWarning(agreed)).toBeUndefined();

    const ahead = await clockSkewMs(store, () => Date.now() + 5_000);
    expect(ahead).toBeGreaterThan(4_500);
    expect(ahead).toBeLessThan(5_500);
    expect(skewWarning(ahead)).toMatch(/^This machine's clock is 5\.\d s ahead of PostgreSQL's\. .*\(NTP\)/);
    expect(skewWarning(await clockSkewMs(store, () => Date.now() - 3_000))).toMatch(/3\.\d s behind/);
  });
});

describe("stores that keep time themselves or share this machine's", () => {
  it("measure nothing on SQLite", async () => {
    const stores = testStores("sqlite");
    try {
      expect(await clockSkewMs(await stores.open())).toBeUndefined();
    } finally {
      await stores.dispose();
    }
  });
});
