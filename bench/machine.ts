import { cpus, totalmem } from "node:os";

export function machine(): Record<string, string | number> {
  const cpu = cpus();
  return {
    cpu: cpu[0]?.model ?? "unknown",
    cpus: cpu.length,
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    node: process.version,
    platform: `${process.platform}-${process.arch}`,
  };
}
