import { describe, expect, it } from "vitest";
import { provisionalName } from "./context.js";

describe("a thread's name at creation", () => {
  it("is the question's first eight words, on one line", () => {
    expect(provisionalName("  how do I\nrotate the   staging keys without downtime please, today?")).toBe(
      "how do I rotate the staging keys without",
    );
  });

  it("stays within Discord's 100 characters, cut with an ellipsis", () => {
    const name = provisionalName(`${"x".repeat(150)} more`);
    expect(name).toHaveLength(80);
    expect(name.endsWith("…")).toBe(true);
  });

  it("falls back when the message has no words (an image, a bare mention)", () => {
    expect(provisionalName("   ", "Question from Ada")).toBe("Question from Ada");
    expect(provisionalName("")).toBe("Question");
  });
});
