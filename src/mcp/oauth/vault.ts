import { createCipheriv, createDecipheriv, randomBytes, scryptSync } from "node:crypto";
import { SwitchboardError } from "../../core/errors.js";
import { registerSecret } from "../../log.js";
import type { StateStore } from "../../store/state.js";

/** The environment variable whose value encrypts OAuth tokens at rest. */
export const SECRET_KEY_ENV = "SWITCHBOARD_SECRET_KEY";

interface Sealed {
  v: 1;
  iv: string;
  tag: string;
  data: string;
}

/**
 * OAuth state in the shared store, encrypted (AES-256-GCM) with a key from the
 * environment: tokens, the client registration, discovery results, and sign-ins in
 * progress. Every replica with the same key reads what another wrote; a dump of the
 * store alone reveals no token. Values it reads back are registered as secrets, so no
 * log line can carry them.
 */
export class TokenVault {
  private readonly key: Buffer;

  constructor(
    private readonly state: StateStore,
    secret: string,
  ) {
    if (secret.length < 16) {
      throw new SwitchboardError(
        "config_invalid",
        `${SECRET_KEY_ENV} is too short: use at least 16 characters (for example \`openssl rand -base64 32\`).`,
      );
    }
    // A passphrase of any length becomes a 256-bit key; the salt only separates this use of it.
    this.key = scryptSync(secret, "switchboard oauth token vault", 32);
  }

  async get<T>(key: string): Promise<T | undefined> {
    const sealed = await this.state.get<Sealed>(`oauth:${key}`);
    if (!sealed) return undefined;
    const value = this.open(sealed, key);
    if (value !== undefined) secretsOf(value);
    return value as T | undefined;
  }

  async put<T>(key: string, value: T, ttlMs?: number): Promise<void> {
    secretsOf(value);
    await this.state.set(`oauth:${key}`, this.seal(value), ttlMs);
  }

  async drop(key: string): Promise<void> {
    await this.state.delete(`oauth:${key}`);
  }

  /** Reads and deletes `key` for one caller only: a sign-in's state is used once. */
  async take<T>(key: string): Promise<T | undefined> {
    const value = await this.get<T>(key);
    if (value === undefined) return undefined;
    // One claim per key: a compare-and-delete differs per backend, a lock is the same on all.
    const lease = await this.state.acquireLock(`oauth:claim:${key}`, 60_000);
    if (!lease) return undefined;
    const still = await this.state.get(`oauth:${key}`);
    await this.state.delete(`oauth:${key}`);
    return still === undefined ? undefined : value;
  }

  get store(): StateStore {
    return this.state;
  }

  private seal(value: unknown): Sealed {
    const iv = randomBytes(12);
    const cipher = createCipheriv("aes-256-gcm", this.key, iv);
    const data = Buffer.concat([cipher.update(JSON.stringify(value), "utf8"), cipher.final()]);
    return {
      v: 1,
      iv: iv.toString("base64"),
      tag: cipher.getAuthTag().toString("base64"),
      data: data.toString("base64"),
    };
  }

  private open(sealed: Sealed, key: string): unknown {
    try {
      const decipher = createDecipheriv("aes-256-gcm", this.key, Buffer.from(sealed.iv, "base64"));
      decipher.setAuthTag(Buffer.from(sealed.tag, "base64"));
      const text = Buffer.concat([decipher.update(Buffer.from(sealed.data, "base64")), decipher.final()]);
      return JSON.parse(text.toString("utf8"));
    } catch {
      throw new SwitchboardError(
        "config_invalid",
        `The stored OAuth record "${key}" cannot be read with this ${SECRET_KEY_ENV}: it was written with another key. Set the key it was written with, or sign in again.`,
      );
    }
  }
}

/** Token-like strings in a record: never to be logged. */
function secretsOf(value: unknown): void {
  if (!value || typeof value !== "object") return;
  for (const [k, v] of Object.entries(value)) {
    if (typeof v === "string" && /token|secret|verifier/i.test(k)) registerSecret(v);
    else if (v && typeof v === "object") secretsOf(v);
  }
}
