/** Replaces `${VAR}` and `${VAR:-default}` in every string of a parsed document. */
export function interpolate(value: unknown, env: NodeJS.ProcessEnv, missing: string[] = []): unknown {
  if (typeof value === "string") {
    return value.replace(
      /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g,
      (_m, name: string, fallback?: string) => {
        const v = env[name];
        if (v !== undefined && v !== "") return v;
        if (fallback !== undefined) return fallback;
        missing.push(name);
        return "";
      },
    );
  }
  if (Array.isArray(value)) return value.map((v) => interpolate(v, env, missing));
  if (value && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, interpolate(v, env, missing)]));
  }
  return value;
}
