import { describe, expect, it } from "vitest";
import { openModal } from "../../../test/emulators/discord/modals.js";
import type { StoredInteraction } from "../../../test/emulators/discord/types.js";
import { checkForm, type FormField } from "../../core/forms.js";
import { discordModal } from "./modals.js";

describe("a form as a Discord modal", () => {
  it("carries options whose values are too long for Discord by their place, and gets the whole value back", () => {
    const base = `projects/acme-production/locations/europe-west4/clusters/${"main-cluster-".repeat(4)}`;
    const cluster: FormField = {
      name: "cluster",
      id: "f0",
      label: "Cluster",
      kind: "choice",
      required: true,
      options: [
        { value: `${base}blue`, label: "Blue" },
        { value: `${base}green`, label: "Green" },
      ],
    };
    expect(cluster.options![0]!.value.length).toBeGreaterThan(100);
    const modal = discordModal({
      ref: "form1",
      title: "k8s",
      fields: [cluster],
      part: 0,
      count: 1,
      submitLabel: "Send",
    });
    // The emulator refuses values over 100 characters and duplicates, as Discord does.
    const opened = openModal({ type: 3 } as StoredInteraction, modal);
    const options = (opened.fields[0]!.component as unknown as { options: Array<{ value: string }> }).options;
    expect(options.map((o) => o.value)).toEqual(["#option-0", "#option-1"]);
    expect(checkForm([cluster], { f0: "#option-1" })).toEqual({
      ok: true,
      content: { cluster: `${base}green` },
    });
  });
});
