import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { decodeTraceRequest } from "./otlp-protobuf.js";

type AnyValue = {
  stringValue?: string;
  intValue?: number | string;
  doubleValue?: number;
  boolValue?: boolean;
  arrayValue?: { values?: AnyValue[] };
};

/** One span as an OTLP/HTTP export carries it (in its JSON shape), its attributes made plain. */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind?: number;
  attributes: Record<string, unknown>;
  status?: { code?: number; message?: string };
  service?: string;
}

function plain(v: AnyValue | undefined): unknown {
  if (!v) return undefined;
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.doubleValue !== undefined) return v.doubleValue;
  if (v.boolValue !== undefined) return v.boolValue;
  if (v.arrayValue) return (v.arrayValue.values ?? []).map(plain);
  return undefined;
}

type KeyValue = { key: string; value?: AnyValue };

/** An OTLP/HTTP receiver on 127.0.0.1 (protobuf or JSON), keeping what it got. */
export class OtlpReceiver {
  readonly spans: ReceivedSpan[] = [];
  readonly requests: { path: string; contentType?: string }[] = [];

  private constructor(private readonly server: Server) {}

  static async start(): Promise<OtlpReceiver> {
    let receiver!: OtlpReceiver;
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        receiver.requests.push({ path: req.url ?? "", contentType: req.headers["content-type"] });
        if (req.method !== "POST" || req.url !== "/v1/traces") {
          res.writeHead(404).end();
          return;
        }
        try {
          const body = Buffer.concat(chunks);
          // OTLP/HTTP's two encodings, each answered in its own (an empty response message).
          if (req.headers["content-type"] === "application/x-protobuf") {
            receiver.take(decodeTraceRequest(body) as Parameters<OtlpReceiver["take"]>[0]);
            res.writeHead(200, { "content-type": "application/x-protobuf" }).end();
          } else {
            receiver.take(JSON.parse(body.toString("utf8")));
            res.writeHead(200, { "content-type": "application/json" }).end("{}");
          }
        } catch {
          res.writeHead(400).end();
        }
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    receiver = new OtlpReceiver(server);
    return receiver;
  }

  get endpoint(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  private take(body: {
    resourceSpans?: {
      resource?: { attributes?: KeyValue[] };
      scopeSpans?: { spans?: (Omit<ReceivedSpan, "attributes"> & { attributes?: KeyValue[] })[] }[];
    }[];
  }): void {
    for (const rs of body.resourceSpans ?? []) {
      const service = rs.resource?.attributes?.find((a) => a.key === "service.name");
      for (const ss of rs.scopeSpans ?? []) {
        for (const s of ss.spans ?? []) {
          const attributes = Object.fromEntries((s.attributes ?? []).map((a) => [a.key, plain(a.value)]));
          this.spans.push({ ...s, attributes, service: plain(service?.value) as string | undefined });
        }
      }
    }
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
