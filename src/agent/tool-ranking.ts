import type { ToolEntry } from "../mcp/types.js";

/**
 * A cheap lexical ranking of tools against what the conversation is about (BM25 over each
 * tool's name, server, description and parameter names). It runs on every turn of a large
 * catalog, so it costs microseconds per tool and never a model call.
 */

const STOPWORDS = new Set(
  (
    "a an and are as at be by can could do does for from have how i in is it its me my of on or " +
    "please that the their them then there these this to was we what when where which who why will " +
    "with would you your tool tools use using"
  ).split(" "),
);

/** Lower-case word stems: `listPullRequests` and "pull requests" meet at `list pull request`. */
export function terms(text: string): string[] {
  return text
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((w) => w.length > 1 && !STOPWORDS.has(w))
    .map(stem);
}

function stem(word: string): string {
  if (word.length > 5 && word.endsWith("ing")) return word.slice(0, -3);
  if (word.length > 4 && word.endsWith("ies")) return `${word.slice(0, -3)}y`;
  if (word.length > 4 && word.endsWith("ed")) return word.slice(0, -2);
  if (word.length > 3 && word.endsWith("s") && !word.endsWith("ss")) return word.slice(0, -1);
  return word;
}

/** The words a tool is found by; its name counts twice, as names are what models and people say. */
function documentOf(tool: ToolEntry): string[] {
  const props = tool.inputSchema.properties;
  const params =
    props && typeof props === "object"
      ? Object.entries(props as Record<string, { description?: unknown }>).map(
          ([name, p]) => `${name} ${typeof p?.description === "string" ? p.description : ""}`,
        )
      : [];
  const name = `${tool.tool} ${tool.tool}`;
  return terms(`${name} ${tool.server} ${tool.description} ${params.join(" ")}`);
}

interface Indexed {
  tool: ToolEntry;
  counts: Map<string, number>;
  length: number;
}

/** An index of one catalog; kept while the catalog's entries are the same objects. */
export class ToolIndex {
  private readonly docs: Indexed[];
  private readonly docFreq = new Map<string, number>();
  private readonly avgLength: number;

  constructor(tools: readonly ToolEntry[]) {
    this.docs = tools.map((tool) => {
      const words = documentOf(tool);
      const counts = new Map<string, number>();
      for (const w of words) counts.set(w, (counts.get(w) ?? 0) + 1);
      for (const w of counts.keys()) this.docFreq.set(w, (this.docFreq.get(w) ?? 0) + 1);
      return { tool, counts, length: words.length };
    });
    this.avgLength = this.docs.reduce((n, d) => n + d.length, 0) / Math.max(1, this.docs.length);
  }

  /**
   * Tools with any word of the query, best first, each with its score. `query` maps a
   * word to its weight (the current message's words weigh more than older ones').
   */
  rank(query: ReadonlyMap<string, number>): Array<{ tool: ToolEntry; score: number }> {
    const k1 = 1.2;
    const b = 0.75;
    const n = this.docs.length;
    const scored: Array<{ tool: ToolEntry; score: number }> = [];
    for (const doc of this.docs) {
      let score = 0;
      for (const [word, weight] of query) {
        const tf = doc.counts.get(word);
        if (!tf) continue;
        const df = this.docFreq.get(word) ?? 0;
        const idf = Math.log(1 + (n - df + 0.5) / (df + 0.5));
        score += weight * idf * ((tf * (k1 + 1)) / (tf + k1 * (1 - b + (b * doc.length) / this.avgLength)));
      }
      if (score > 0) scored.push({ tool: doc.tool, score });
    }
    return scored.sort((x, y) => y.score - x.score);
  }
}

/** Query weights from texts, most important first: each later text weighs half the one before. */
export function queryOf(texts: readonly string[]): Map<string, number> {
  const weights = new Map<string, number>();
  texts.forEach((text, i) => {
    const weight = 1 / 2 ** i;
    for (const w of terms(text)) weights.set(w, Math.max(weights.get(w) ?? 0, weight));
  });
  return weights;
}
