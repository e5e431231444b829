import type { CallToolResult, Tool } from "@modelcontextprotocol/sdk/types.js";
import type { JsonSchemaValidator } from "@modelcontextprotocol/sdk/validation";
import { AjvJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/ajv";
import { log } from "../log.js";

const ajv = new AjvJsonSchemaValidator();
/** Compiled once per schema object; null for a schema Ajv cannot compile, which checks nothing. */
const compiled = new WeakMap<object, JsonSchemaValidator<unknown> | null>();

function validatorOf(schema: object): JsonSchemaValidator<unknown> | null {
  let check = compiled.get(schema);
  if (check === undefined) {
    try {
      check = ajv.getValidator(schema);
    } catch {
      check = null;
    }
    compiled.set(schema, check);
  }
  return check;
}

/** How a successful result departs from its tool's `outputSchema`; undefined when it does not. */
export function outputMismatch(tool: Tool, result: CallToolResult): string | undefined {
  if (!tool.outputSchema || result.isError) return undefined;
  if (!result.structuredContent) return "it has no structured content";
  const check = validatorOf(tool.outputSchema);
  const verdict = check?.(result.structuredContent);
  return verdict && !verdict.valid ? verdict.errorMessage : undefined;
}

/**
 * The SDK's Client.callTool checks structuredContent against the tool's outputSchema (Ajv
 * with formats) and throws McpError on a mismatch, or when it is missing, after the tool
 * ran: its content is lost, and the model, told the server answered with an error, may run
 * a write twice. A Python FastMCP tool that returns a naive datetime for `format: date-time`
 * is enough. So calls go round that check (see session-call.ts), the result is kept as
 * given, and a mismatch is logged here once per tool, for whoever runs the server.
 */
export class OutputChecks {
  private readonly told = new Set<string>();

  constructor(private readonly server: string) {}

  note(tool: Tool | undefined, result: CallToolResult): void {
    if (!tool || this.told.has(tool.name)) return;
    const mismatch = outputMismatch(tool, result);
    if (mismatch === undefined) return;
    this.told.add(tool.name);
    log.warn(
      { server: this.server, tool: tool.name, mismatch },
      "a tool's result did not match its output schema; it is used as given",
    );
  }
}
