import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { StoreDedupe } from "../store/dedupe.js";
import { openStore, type Store } from "../store/index.js";
import { REFUSED_NOTE } from "./access.js";
import type { Inbound } from "./contract.js";
import { accept, type IntakeChecks } from "./intake.js";

let dir: string | undefined;
const stores: Store[] = [];
afterEach(async () => {
  for (const s of stores.splice(0)) await s.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

async function replica(owner: string): Promise<StoreDedupe> {
  dir ??= mkdtempSync(join(tmpdir(), "sb-intake-"));
  const store = await openStore(`sqlite://${join(dir, "store.sqlite")}`);
  stores.push(store);
  return new StoreDedupe(store, owner, 2_000);
}

/** A Slack mention as a copy of it arrives: its event id, and the message's `channel:ts`. */
const mention = (redelivered = false) =>
  ({
    id: "Ev1",
    aliases: ["C1:1.0001"],
    key: "slack:T1:C1:1.0001",
    text: "what is up?",
    ...(redelivered ? { redelivered } : {}),
    reply: { notice: async () => undefined },
  }) as unknown as Inbound;

/** One replica's checks, with the sightings it made already (won at the same moment as the other's) standing. */
function checks(dedupe: StoreDedupe, won: string): IntakeChecks {
  return {
    admit: () => "yes",
    prompt: async () => ({ say: "" }),
    firstSight: (id) => (id === won ? Promise.resolve(true) : dedupe.firstSight(id)),
    redelivered: (id, waits) => dedupe.redelivered(id, async () => true, waits),
    release: (id) => dedupe.release(id),
  };
}

describe("two copies of one message racing on two replicas", () => {
  it("each winning one of its ids: the one that cannot take the rest gives back what it won, and the other answers", async () => {
    const [a, b] = [await replica("a"), await replica("b")];
    // The first copy reaches a, Slack's redelivery of it b, at once: a wins the event id, b the message's channel:ts.
    expect(await a.firstSight("Ev1")).toBe(true);
    expect(await b.firstSight("C1:1.0001")).toBe(true);
    const atB = accept(mention(true), checks(b, "C1:1.0001"));
    await new Promise((r) => setTimeout(r, 200));
    expect(await accept(mention(), checks(a, "Ev1"))).toBeUndefined();
    // Without a's claim given back, b waits out its patience (2 s) for a live claimant and drops it too.
    expect((await atB)?.id).toBe("Ev1");
  });
});

describe("a message answered at intake, whose two copies reach two replicas", () => {
  /** A's and b's checks on one store, each counting the prompts it expanded. */
  async function pair(admit: "yes" | "tell") {
    const asked: string[] = [];
    const both = await Promise.all(
      ["a", "b"].map(async (owner) => {
        const dedupe = await replica(owner);
        const c: IntakeChecks = {
          admit: () => admit,
          prompt: async (text) => {
            asked.push(text);
            return { say: "There is no prompt named nosuch." };
          },
          firstSight: (id) => dedupe.firstSight(id),
          release: (id) => dedupe.release(id),
        };
        return c;
      }),
    );
    return { asked, both };
  }

  /** Slack's app_mention and message events of one mention: their own ids, one `channel:ts`. */
  const copy = (id: string, text: string, said: string[]) =>
    ({
      id,
      aliases: ["C1:1.0001"],
      key: "slack:T1:C1:1.0001",
      text,
      reply: { notice: async (t: string) => void said.push(t) },
    }) as unknown as Inbound;

  it.each([
    ["a /prompt's sentence", "yes", "/prompt nosuch", "There is no prompt named nosuch."],
    ["the access lists' refusal", "tell", "hello", REFUSED_NOTE],
  ] as const)("says %s once, and asks a prompt's server once", async (_, admit, text, sentence) => {
    const { asked, both } = await pair(admit);
    const said: string[] = [];
    const [a, b] = both as [IntakeChecks, IntakeChecks];
    const results = await Promise.all([
      accept(copy("Ev1", text, said), a),
      accept(copy("Ev2", text, said), b),
    ]);
    expect(results).toEqual([undefined, undefined]);
    expect(said).toEqual([sentence]);
    expect(asked.length).toBe(admit === "yes" ? 1 : 0);
  });
});
