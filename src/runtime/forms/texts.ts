import type { FormField } from "../../core/forms.js";
import type { FormAnswer, FormRecord } from "../../store/forms.js";
import { OPEN_FORM, type Question } from "../contract.js";

function who(user: { id: string; name?: string } | undefined): string {
  return user ? (user.name ?? user.id) : "Someone";
}

export function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return url;
  }
}

function fieldSummary(fields: readonly FormField[]): string {
  const names = fields.map((f) => (f.required ? `${f.label} (required)` : f.label));
  const shown =
    names.length > 6 ? `${names.slice(0, 6).join(", ")} and ${names.length - 6} more` : names.join(", ");
  return `${fields.length} field${fields.length === 1 ? "" : "s"}: ${shown}`;
}

/** The message in the thread that holds a form's buttons. `parts`: how many modals the platform needs. */
export function formQuestion(r: FormRecord, parts: number, minutes: string): Question {
  const asker = who(r.asker);
  if (r.mode === "url" && r.private) {
    return {
      ref: r.ref,
      text:
        `🔑 ${quote(r.message)}\n` +
        `${asker}: press Connect for your own sign-in link (only you see it). It waits ${minutes}.`,
      choices: [
        { value: REVEAL, label: `Connect ${r.server}`.slice(0, 75), style: "primary" },
        { value: "cancel", label: "Cancel" },
      ],
    };
  }
  if (r.mode === "url") {
    const host = hostOf(r.url ?? "");
    return {
      ref: r.ref,
      text:
        `🔗 **${r.server}** asks ${asker} to open a page on **${host}**:\n> ${quote(r.message)}\n` +
        `${r.mustComplete ? "Press Done once you have finished there." : "Open it, or press Done once you have finished there."} ` +
        `Only ${asker} can answer; it waits ${minutes}.`,
      choices: [
        { value: "open", label: `Open ${host}`.slice(0, 75), style: "primary", url: r.url ?? "" },
        { value: "done", label: "Done" },
        { value: "decline", label: "Decline", style: "danger" },
      ],
    };
  }
  const fields = r.fields ?? [];
  if (fields.length === 0) {
    // Nothing to fill in (a server asking only for a yes): no form to open, which Discord
    // could not show anyway (a modal needs at least one input).
    return {
      ref: r.ref,
      text:
        `📝 **${r.server}** asks ${asker} to confirm:\n> ${quote(r.message)}\n` +
        `Only ${asker} can answer; it waits ${minutes}, then it is cancelled.`,
      choices: [
        { value: CONFIRM, label: "Accept", style: "primary" },
        { value: "decline", label: "Decline", style: "danger" },
        { value: "cancel", label: "Cancel" },
      ],
    };
  }
  const split =
    parts > 1
      ? `\nThis platform shows at most ${Math.ceil(fields.length / parts)} fields at a time, so the form opens in ${parts} parts: press Fill in once for each.`
      : "";
  return {
    ref: r.ref,
    text:
      `📝 **${r.server}** asks ${asker} to fill in a form:\n> ${quote(r.message)}\n` +
      `${fieldSummary(fields)}.${split}\nOnly ${asker} can answer; it waits ${minutes}, then it is cancelled.`,
    choices: [
      { value: OPEN_FORM, label: "Fill in", style: "primary" },
      { value: "decline", label: "Decline", style: "danger" },
      { value: "cancel", label: "Cancel" },
    ],
  };
}

function quote(text: string): string {
  const t = text.length > 600 ? `${text.slice(0, 600)}…` : text;
  return t.replace(/\n/g, "\n> ");
}

/** The button value that accepts a form with no fields. */
export const CONFIRM = "accept";

/** The button value of a private sign-in's Connect: the link is told to the one who clicks, if they are the asker. */
export const REVEAL = "reveal";

/** The link of a private sign-in, for the asker's eyes only. */
export function revealText(r: FormRecord): string {
  return `Sign in to ${r.server} with your own account (this link is yours alone and works once): ${r.url ?? ""}`;
}

/** What the question's message says once it is answered (the buttons are gone). Submitted values are never shown. */
export function settledForm(r: FormRecord, a: FormAnswer, minutes: string): string {
  if (r.private) return settledSignIn(r, a, minutes);
  const what =
    r.mode === "url"
      ? `the page on **${hostOf(r.url ?? "")}** for **${r.server}**`
      : `**${r.server}**'s form`;
  if (a.end === "timeout") return `⌛ Nobody answered ${what} within ${minutes}, so it was cancelled.`;
  if (a.end === "ended") return `✖️ ${capital(what)} is no longer needed: the tool call ended.`;
  if (a.end === "completed") return `✅ The flow on ${what} is finished.`;
  switch (a.action) {
    case "accept":
      return r.mode === "url" ? `✅ ${who(a.by)} finished ${what}.` : `✅ ${who(a.by)} filled in ${what}.`;
    case "decline":
      return `🚫 ${who(a.by)} declined ${what}.`;
    default:
      return `✖️ ${who(a.by)} cancelled ${what}.`;
  }
}

function settledSignIn(r: FormRecord, a: FormAnswer, minutes: string): string {
  const asker = who(r.asker);
  if (a.end === "timeout") return `⌛ ${asker} did not sign in to **${r.server}** within ${minutes}.`;
  if (a.end === "ended") return `✖️ The sign-in to **${r.server}** is no longer needed: the tool call ended.`;
  if (a.action === "accept") return `✅ ${asker} is signed in to **${r.server}**.`;
  return `✖️ ${asker} did not sign in to **${r.server}**.`;
}

function capital(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}

export const FORM_OVER =
  "This form is no longer waiting for an answer: the tool call that asked for it has ended.";
