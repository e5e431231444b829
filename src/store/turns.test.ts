import { afterEach, expect, it } from "vitest";
import { describeEachStore, type TestStores, testStores } from "./testing.js";
import { TurnLedger } from "./turns.js";

describeEachStore("TurnLedger on %s", (kind) => {
  let stores: TestStores;
  afterEach(async () => {
    await stores.dispose();
  });

  it("lists the turns that have not ended, with where their reply was written", async () => {
    stores = testStores(kind);
    const ledger = new TurnLedger(await stores.open());
    const keys = ["discord:G1:1", "discord:G1:2", "discord:G1:3"];
    const records = [];
    for (const key of keys) records.push(await ledger.begin(key));
    await ledger.address(records[0]!, { messages: ["m1", "m2"], streaming: true });
    await ledger.end("discord:G1:2");

    const restarted = new TurnLedger(await stores.open());
    const pending = await restarted.pending();
    expect(pending.map((r) => r.key).sort()).toEqual(["discord:G1:1", "discord:G1:3"]);
    expect(pending.find((r) => r.key === "discord:G1:1")?.address).toEqual({
      messages: ["m1", "m2"],
      streaming: true,
    });
    expect(pending.find((r) => r.key === "discord:G1:3")?.address).toBeUndefined();
  });

  it("keeps every key when many threads begin turns at once", async () => {
    stores = testStores(kind);
    const ledger = new TurnLedger(await stores.open());
    const keys = Array.from({ length: 20 }, (_, i) => `console:local${i}`);
    await Promise.all(keys.map((key) => ledger.begin(key)));
    expect((await ledger.pending()).map((r) => r.key).sort()).toEqual([...keys].sort());
    await Promise.all(keys.map((key) => ledger.end(key)));
    expect(await ledger.pending()).toEqual([]);
  });

  it("does not let a later record change the one it stored", async () => {
    stores = testStores(kind);
    const ledger = new TurnLedger(await stores.open());
    const record = await ledger.begin("slack:T1:C1:1.1");
    const address = { messages: ["1.2"] };
    await ledger.address(record, address);
    address.messages.push("1.3");
    expect((await ledger.get("slack:T1:C1:1.1"))?.address).toEqual({ messages: ["1.2"] });
  });
});
