import { access, mkdir, writeFile } from "node:fs/promises";
import { join, relative } from "node:path";
import type { Artifact } from "../../core/artifacts.js";
import type { Reply, TextSink } from "../../runtime/contract.js";

export interface ConsoleStreams {
  out: NodeJS.WritableStream;
  err: NodeJS.WritableStream;
  artifactsDir: string;
  cwd: string;
}

/** The answer streams to stdout as it comes; everything about the answer goes to stderr. */
export class ConsoleReply implements Reply {
  private lastStatus = "";
  private wrote = "";

  constructor(private readonly io: ConsoleStreams) {}

  /** A terminal has no messages to find again: there is never an address to record. */
  onAddress(): void {}

  async status(text: string): Promise<void> {
    if (text === this.lastStatus) return;
    this.lastStatus = text;
    this.io.err.write(`… ${text}\n`);
  }

  stream(): TextSink {
    return {
      write: (delta) => {
        this.wrote += delta;
        this.io.out.write(delta);
      },
      finish: async () => {
        if (!this.wrote.endsWith("\n")) this.io.out.write("\n");
      },
      fail: async (message) => {
        const gap = this.wrote && !this.wrote.endsWith("\n") ? "\n\n" : "";
        this.io.out.write(`${gap}${this.wrote ? "\n" : ""}⚠️ ${message}\n`);
      },
    };
  }

  async upload(a: Artifact): Promise<void> {
    await mkdir(this.io.artifactsDir, { recursive: true });
    const path = await uniquePath(this.io.artifactsDir, a.filename);
    await writeFile(path, a.bytes);
    this.io.out.write(`📎 ${a.title}: ${relative(this.io.cwd, path) || path}\n`);
  }

  async title(t: string): Promise<void> {
    this.io.err.write(`Title: ${t}\n`);
  }

  async notice(text: string): Promise<void> {
    this.io.out.write(`${text}\n`);
  }
}

async function uniquePath(dir: string, filename: string): Promise<string> {
  const safe = filename.replace(/[^\w.-]+/g, "_") || "file";
  const dot = safe.lastIndexOf(".");
  const [base, ext] = dot > 0 ? [safe.slice(0, dot), safe.slice(dot)] : [safe, ""];
  for (let n = 0; ; n++) {
    const candidate = join(dir, n === 0 ? safe : `${base}-${n}${ext}`);
    try {
      await access(candidate);
    } catch {
      return candidate;
    }
  }
}
