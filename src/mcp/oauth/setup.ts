import { SwitchboardError } from "../../core/errors.js";
import { registerSecret } from "../../log.js";
import type { Store } from "../../store/index.js";
import { createState } from "../../store/state.js";
import type { HttpServerConfig, ServerConfig } from "../servers.js";
import { OAuthSignIns, type SignInOptions } from "./sign-ins.js";
import { SECRET_KEY_ENV, TokenVault } from "./vault.js";

/** The path of the bot's HTTP server where authorization servers send the browser back. */
export const CALLBACK_PATH = "/oauth/callback";

/**
 * The sign-ins of the servers whose mcp.json entry has `oauth`, or undefined when none
 * has. Their tokens are encrypted with SWITCHBOARD_SECRET_KEY: without it they refuse to
 * start, rather than keep tokens in the clear.
 */
export function setUpSignIns(
  servers: readonly ServerConfig[],
  store: Store,
  env: NodeJS.ProcessEnv,
  opts: SignInOptions,
): OAuthSignIns | undefined {
  const signing = servers.filter(
    (s): s is HttpServerConfig => s.transport === "http" && s.oauth !== undefined,
  );
  if (signing.length === 0) return undefined;
  const secret = env[SECRET_KEY_ENV];
  if (!secret) {
    throw new SwitchboardError(
      "config_invalid",
      `${signing.map((s) => s.name).join(", ")} sign${signing.length === 1 ? "s" : ""} in with OAuth, whose tokens are kept encrypted: set ${SECRET_KEY_ENV} to a secret of at least 16 characters (for example \`openssl rand -base64 32\`), the same on every replica.`,
    );
  }
  registerSecret(secret);
  for (const s of signing) registerSecret(s.oauth?.clientSecret);
  const vault = new TokenVault(createState(store), secret);
  return new OAuthSignIns(vault, new Map(signing.map((s) => [s.name, s])), opts);
}
