import type { Tool } from "@modelcontextprotocol/sdk/types.js";
import { describe, expect, it } from "vitest";
import { stdio } from "./testkit.js";
import { filterWarnings, servableTools } from "./tool-filters.js";

const tools = ["read_file", "write_file", "edit_file"].map(
  (name): Tool => ({
    name,
    inputSchema: { type: "object" },
  }),
);

describe("mcp.json's tool filters against the tools a server lists", () => {
  it("says which entries name no tool, and what they likely meant", () => {
    const config = stdio("files", [], {
      disabledTools: ["files__write_file", "Edit_File", "move_file", "read_file"],
      enabledTools: ["read_file", "write_file", "edit_file", "files__read_file"],
    });
    expect(filterWarnings(tools, config)).toEqual([
      'enabledTools names "files__read_file", which is not a tool of this server, so it enables nothing: name the tool as the server lists it, without the "files__" that the model sees ("read_file").',
      'disabledTools names "files__write_file", which is not a tool of this server, so it disables nothing: name the tool as the server lists it, without the "files__" that the model sees ("write_file").',
      'disabledTools names "Edit_File", which is not a tool of this server, so it disables nothing: did you mean "edit_file"?',
      'disabledTools names "move_file", which is not a tool of this server, so it disables nothing.',
    ]);
    // The filters themselves are unchanged: only exact names count.
    expect(servableTools(tools, config).map((t) => t.name)).toEqual(["write_file", "edit_file"]);
  });

  it("says nothing when every entry names a tool, or there are no filters", () => {
    expect(filterWarnings(tools, stdio("files", [], { disabledTools: ["write_file"] }))).toEqual([]);
    expect(filterWarnings(tools, stdio("files", []))).toEqual([]);
  });
});
