import { z } from "zod";

/** What the bot reads of one stdio message unless mcp.maxAnswerMb says otherwise. */
export const DEFAULT_MAX_ANSWER_MB = 64;

/** `mcp:` in switchboard.yaml: how the hub treats every server. */
export const mcpSettingsSchema = z
  .object({
    callTimeoutMs: z.number().int().positive().default(60_000),
    /** A start-up that runs out of it is given twice as long at the next attempt (see startDeadline). */
    connectTimeoutMs: z.number().int().positive().default(30_000),
    maxOutputChars: z.number().int().positive().default(100_000),
    blockedServers: z.array(z.string()).default([]),
    maxRestarts: z.number().int().min(0).default(5),
    /** The most the bot reads of one answer from a stdio server, in MB (an image counts as its base64). */
    maxAnswerMb: z.number().positive().default(DEFAULT_MAX_ANSWER_MB),
  })
  .strict()
  .prefault({});
