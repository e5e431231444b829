const EXTENSIONS: Record<string, string> = {
  ts: "ts",
  typescript: "ts",
  js: "js",
  javascript: "js",
  py: "py",
  python: "py",
  json: "json",
  sh: "sh",
  bash: "sh",
  shell: "sh",
  sql: "sql",
  yaml: "yaml",
  yml: "yaml",
  go: "go",
  rust: "rs",
  rs: "rs",
  java: "java",
  html: "html",
  css: "css",
  md: "md",
  markdown: "md",
  csv: "csv",
  xml: "xml",
  c: "c",
  cpp: "cpp",
  "c++": "cpp",
  rb: "rb",
  ruby: "rb",
  php: "php",
  kotlin: "kt",
  swift: "swift",
};

/**
 * Code blocks longer than `minLines` in a final answer are also attached as files: chat
 * clients fold or cut long messages, while a file keeps the code whole and downloadable.
 */
export function codeBlockArtifacts(answer: string, minLines: number): Artifact[] {
  if (minLines <= 0) return [];
  const artifacts: Artifact[] = [];
  const fence = /^(`{3,}|~{3,})([^\n`]*)\n([\s\S]*?)^\1[ \t]*$/gm;
  for (const match of answer.matchAll(fence)) {
    const info = (match[2] ?? "").trim().split(/\s+/)[0]?.toLowerCase() ?? "";
    const body = match[3] ?? "";
    const lines = body.split("\n").length - (body.endsWith("\n") ? 1 : 0);
    if (lines <= minLines) continue;
    const ext = EXTENSIONS[info] ?? "txt";
    const n = artifacts.length + 1;
    artifacts.push({
      title: `Code block ${n}${info ? ` (${info})` : ""}, ${lines} lines`,
      filename: `code-${n}.${ext}`,
      mimeType: ext === "json" ? "application/json" : "text/plain",
      bytes: new TextEncoder().encode(body),
    });
  }
  return artifacts;
}

import type { Artifact } from "../core/artifacts.js";
