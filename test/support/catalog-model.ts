/**
 * A scripted model for the 200-tool catalog (`catalogServers` in src/mcp/testkit.ts): it
 * calls the tool that answers the question when it is offered, searches for it with
 * `search_tools` when it is not, and ends with the tool's result. Tests and the bench share it.
 */
import { SEARCH_TOOL } from "../../src/agent/tool-offer.js";
import { ROUTER_SYSTEM } from "../../src/agent/tool-router.js";
import type { RecordedRequest, ScriptedTurn } from "../emulators/llm/index.js";
import { isTitleRequest, lastUserText, toolResultsSinceUser } from "./llm-text.js";

export interface CatalogAsk {
  text: string;
  /** The model-facing name of the tool that answers it. */
  tool: string;
  /** What the model searches for when the tool is not offered. */
  search: string;
}

export const CATALOG_ASKS: CatalogAsk[] = [
  {
    text: "What is the weather forecast for Paris tomorrow?",
    tool: "weather__get_forecast",
    search: "weather forecast",
  },
  {
    text: "Open a pull request from the branch fix-login",
    tool: "github__create_pull_request",
    search: "pull request",
  },
  { text: "Refund the last payment of customer 42", tool: "billing__create_refund", search: "refund" },
  {
    text: "Who is on the on-call schedule this weekend?",
    tool: "tickets__get_on_call_schedule",
    search: "on call",
  },
  // No word of this one is in any tool: only a search finds it.
  { text: "Will it rain in Oslo on Saturday?", tool: "weather__get_forecast", search: "weather forecast" },
  { text: "Add a note to the Acme deal saying they signed", tool: "crm__create_note", search: "crm note" },
  {
    text: "Make a share link for the Q3 report folder",
    tool: "storage__create_share_link",
    search: "share link",
  },
  {
    text: "Which meeting rooms are free at 3pm?",
    tool: "calendar__list_meeting_room",
    search: "meeting room",
  },
  { text: "Put that song on my running playlist", tool: "music__create_playlist", search: "playlist" },
  // Nor this one.
  {
    text: "How long is the drive from Lyon to Geneva right now?",
    tool: "maps__get_route",
    search: "route directions",
  },
];

/** A request from the tool router (agent.toolRouter), as the router model sees it. */
export function isRouterRequest(req: RecordedRequest): boolean {
  return req.system === ROUTER_SYSTEM;
}

/** A small router model that knows the questions: the answering tool's server, or NONE. */
function routerAnswer(req: RecordedRequest): ScriptedTurn {
  const latest = /Latest message: (.*)$/m.exec(lastUserText(req))?.[1] ?? "";
  const ask = CATALOG_ASKS.find((a) => latest.includes(a.text));
  return { text: ask ? (ask.tool.split("__")[0] ?? "NONE") : "NONE" };
}

export function catalogModel(req: RecordedRequest): ScriptedTurn {
  if (isTitleRequest(req)) return { text: "Catalog" };
  if (isRouterRequest(req)) return routerAnswer(req);
  const said = lastUserText(req);
  const ask = CATALOG_ASKS.find((a) => said.includes(a.text));
  if (!ask) return { text: "I do not know that one." };
  const results = toolResultsSinceUser(req);
  const ran = results.find((r) => r.includes(" ran with "));
  if (ran) return { text: `Done: ${ran}` };
  if (req.toolNames.includes(ask.tool)) return { toolCalls: [{ name: ask.tool, arguments: {} }] };
  if (results.length === 0 && req.toolNames.includes(SEARCH_TOOL)) {
    return { toolCalls: [{ name: SEARCH_TOOL, arguments: { query: ask.search } }] };
  }
  return { text: `No ${ask.tool} among ${req.toolNames.length} tools.` };
}

/** What a catalog answer says when the right tool ran on its server. */
export function ranRightTool(answer: string, ask: CatalogAsk): boolean {
  const [server, name] = ask.tool.split("__");
  return answer.includes(`${server}/${name} ran with`);
}
