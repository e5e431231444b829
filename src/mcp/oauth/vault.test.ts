import { afterEach, expect, it } from "vitest";
import { createState } from "../../store/state.js";
import { describeEachStore, type TestStores, testStores } from "../../store/testing.js";
import { TokenVault } from "./vault.js";

const KEY = "a test key for the token vault";

describeEachStore("TokenVault on %s", (kind) => {
  let stores: TestStores;
  afterEach(async () => {
    await stores.dispose();
  });

  it("keeps records encrypted, readable by every replica with the key, and by none without it", async () => {
    stores = testStores(kind);
    const [one, two] = [await stores.open(), await stores.open()];
    const a = new TokenVault(createState(one), KEY);
    await a.put("srv:shared:tokens", {
      tokens: { access_token: "at-secret-value", refresh_token: "rt-secret" },
    });
    // What the store holds has no trace of the token.
    const raw = JSON.stringify(await createState(two).get("oauth:srv:shared:tokens"));
    expect(raw).not.toContain("at-secret-value");
    expect(raw).not.toContain("rt-secret");
    expect(await new TokenVault(createState(two), KEY).get("srv:shared:tokens")).toEqual({
      tokens: { access_token: "at-secret-value", refresh_token: "rt-secret" },
    });
    await expect(
      new TokenVault(createState(two), "another key, just as long").get("srv:shared:tokens"),
    ).rejects.toThrow(/cannot be read with this SWITCHBOARD_SECRET_KEY/);
  });

  it("gives a sign-in's state to one taker only", async () => {
    stores = testStores(kind);
    const vault = new TokenVault(createState(await stores.open()), KEY);
    await vault.put("flow:abc", { server: "srv" }, 60_000);
    const taken = await Promise.all([vault.take("flow:abc"), vault.take("flow:abc"), vault.take("flow:abc")]);
    expect(taken.filter(Boolean)).toEqual([{ server: "srv" }]);
    expect(await vault.take("flow:abc")).toBeUndefined();
  });

  it("refuses a key too short to protect anything", async () => {
    stores = testStores(kind);
    const state = createState(await stores.open());
    expect(() => new TokenVault(state, "short")).toThrow(/at least 16 characters/);
  });
});
