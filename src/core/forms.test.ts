import { describe, expect, it } from "vitest";
import { checkForm, type FormField, formParts } from "./forms.js";

const field = (over: Partial<FormField> & Pick<FormField, "kind">): FormField => ({
  name: over.name ?? over.kind,
  id: over.id ?? `f_${over.kind}`,
  label: over.label ?? over.kind,
  required: false,
  ...over,
});

describe("checking a submitted form", () => {
  it("types every kind of value and leaves out empty optional fields", () => {
    const fields = [
      field({ kind: "text", required: true }),
      field({ kind: "email" }),
      field({ kind: "url" }),
      field({ kind: "date" }),
      field({ kind: "integer", minimum: 1, maximum: 100 }),
      field({ kind: "number" }),
      field({ kind: "boolean" }),
      field({ kind: "choice", options: [{ value: "hero-1", label: "Superman" }] }),
      field({
        kind: "choices",
        options: [
          { value: "a", label: "A" },
          { value: "b", label: "B" },
        ],
        maxItems: 2,
      }),
      field({ kind: "text", name: "note", id: "f_note" }),
    ];
    const checked = checkForm(fields, {
      f_text: " Ada ",
      f_email: "ada@example.com",
      f_url: "https://ada.dev",
      f_date: "2026-02-28",
      f_integer: "42",
      f_number: "3.14",
      f_boolean: "true",
      f_choice: "superman",
      f_choices: ["b", "a"],
      f_note: "",
    });
    expect(checked).toEqual({
      ok: true,
      content: {
        text: "Ada",
        email: "ada@example.com",
        url: "https://ada.dev",
        date: "2026-02-28",
        integer: 42,
        number: 3.14,
        boolean: true,
        choice: "hero-1",
        choices: ["b", "a"],
      },
    });
  });

  it("names each wrong field with what to do, by input id", () => {
    const fields = [
      field({ kind: "text", label: "Name", required: true }),
      field({ kind: "email", label: "Email" }),
      field({ kind: "integer", label: "Age", minimum: 1, maximum: 100 }),
      field({ kind: "date", label: "Birthday" }),
      field({
        kind: "choices",
        label: "Fish",
        options: [{ value: "t", label: "Tuna" }],
        minItems: 1,
        required: true,
      }),
      field({ kind: "url", label: "Site" }),
    ];
    const checked = checkForm(fields, {
      f_text: "  ",
      f_email: "not-an-email",
      f_integer: "4.5",
      f_date: "2026-02-30",
      f_choices: ["shark"],
      f_url: "javascript:alert(1)",
    });
    expect(checked.ok).toBe(false);
    if (checked.ok) return;
    expect(checked.errors).toEqual({
      f_text: "Name: this field is required.",
      f_email: "Email: enter an email address, like name@example.com.",
      f_integer: "Age: enter a whole number from 1 to 100.",
      f_date: "Birthday: enter a date as YYYY-MM-DD, like 2026-01-31.",
      f_choices: 'Fish: "shark" is not one of Tuna.',
      f_url: "Site: enter a web address starting with https://.",
    });
  });

  it("refuses numbers out of bounds and too many choices", () => {
    const checked = checkForm(
      [
        field({ kind: "number", label: "N", minimum: 0, maximum: 10 }),
        field({
          kind: "choices",
          label: "C",
          options: ["a", "b", "c"].map((v) => ({ value: v, label: v })),
          maxItems: 2,
        }),
        field({ kind: "text", label: "T", maxLength: 3 }),
      ],
      { f_number: "11", f_choices: ["a", "b", "c"], f_text: "abcd" },
    );
    expect(checked).toEqual({
      ok: false,
      errors: {
        f_number: "N: enter a number from 0 to 10.",
        f_choices: "C: choose at most 2.",
        f_text: "T: enter at most 3 characters (this has 4).",
      },
    });
  });

  it("reads numbers as written in English, and refuses what only looks like one", () => {
    const n = field({ kind: "number", label: "N" });
    const one = (text: string) => checkForm([n], { f_number: text });
    expect(one("1,000.5")).toEqual({ ok: true, content: { number: 1000.5 } });
    expect(one("-.5")).toEqual({ ok: true, content: { number: -0.5 } });
    expect(one("2e3")).toEqual({ ok: true, content: { number: 2000 } });
    for (const text of ["2,5", "1,00"])
      expect(one(text), text).toEqual({
        ok: false,
        errors: { f_number: "N: enter a number, with a point for decimals (like 2.5)." },
      });
    for (const text of ["0x10", "1,0000", "Infinity", "1_000", "12abc", "+", "."])
      expect(one(text), text).toEqual({ ok: false, errors: { f_number: "N: enter a number." } });
  });

  it("sends a date and time with seconds and a zone, UTC unless one was typed", () => {
    const at = field({ kind: "datetime", label: "When" });
    const one = (text: string) => checkForm([at], { f_datetime: text });
    expect(one("2026-01-31 09:30")).toEqual({ ok: true, content: { datetime: "2026-01-31T09:30:00Z" } });
    expect(one("2026-01-31T09:30")).toEqual({ ok: true, content: { datetime: "2026-01-31T09:30:00Z" } });
    expect(one("2026-01-31T09:30:15.250Z")).toEqual({
      ok: true,
      content: { datetime: "2026-01-31T09:30:15.250Z" },
    });
    expect(one("2026-01-31 09:30 +0100")).toEqual({
      ok: true,
      content: { datetime: "2026-01-31T09:30:00+01:00" },
    });
    expect(one("2026-01-31 09:30 utc")).toEqual({ ok: true, content: { datetime: "2026-01-31T09:30:00Z" } });
    for (const text of [
      "2026-02-30 09:30",
      "2026-01-31 24:00",
      "2026-01-31",
      "31/01/2026 09:30",
      "2026-01-31 09:30+25:00",
    ])
      expect(one(text), text).toEqual({
        ok: false,
        errors: {
          f_datetime: "When: enter a date and time in UTC as YYYY-MM-DD HH:MM, like 2026-01-31 09:30.",
        },
      });
  });

  it("splits fields into parts of a platform's size", () => {
    const fields = Array.from({ length: 11 }, (_, i) => field({ kind: "text", id: `f${i}`, name: `n${i}` }));
    expect(formParts(fields, 5).map((p) => p.length)).toEqual([5, 5, 1]);
    expect(formParts([], 5)).toEqual([[]]);
  });
});
