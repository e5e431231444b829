import { HttpError } from "./rest.js";

/** A field's path in a request body: keys and array indices. */
export type Path = (string | number)[];
type Json = Record<string, unknown>;

/** Discord's Invalid Form Body: errors nested by path, `_errors` lists at the leaves. */
export class FormErrors {
  readonly tree: Json = {};
  private count = 0;

  add(path: Path, code: string, message: string): void {
    let node = this.tree;
    for (const key of path) {
      const k = String(key);
      node[k] ??= {};
      node = node[k] as Json;
    }
    node._errors ??= [];
    (node._errors as { code: string; message: string }[]).push({ code, message });
    this.count += 1;
  }

  throwIfAny(): void {
    if (this.count > 0) {
      throw new HttpError(400, { code: 50035, message: "Invalid Form Body", errors: this.tree });
    }
  }
}

/**
 * Checks of single fields that record Discord's error for each bad one and carry on, since
 * Discord reports every bad field of a body at once. Subclasses check whole objects.
 */
export class FieldChecker {
  readonly errors = new FormErrors();

  string(at: Path, value: unknown, min: number, max: number, required: boolean): string | undefined {
    if (value === undefined || value === null) {
      if (required) this.errors.add(at, "BASE_TYPE_REQUIRED", "This field is required");
      return undefined;
    }
    if (typeof value !== "string") {
      this.errors.add(at, "BASE_TYPE_STRING", `Could not interpret "${String(value)}" as string.`);
      return undefined;
    }
    if (value.length < min || value.length > max) {
      if (min > 0)
        this.errors.add(at, "BASE_TYPE_BAD_LENGTH", `Must be between ${min} and ${max} in length.`);
      else this.errors.add(at, "BASE_TYPE_MAX_LENGTH", `Must be ${max} or fewer in length.`);
      return undefined;
    }
    return value;
  }

  list(at: Path, value: unknown, min: number, max: number, required: boolean): unknown[] | undefined {
    if (value === undefined || value === null) {
      if (required) this.errors.add(at, "BASE_TYPE_REQUIRED", "This field is required");
      return undefined;
    }
    if (!Array.isArray(value)) {
      this.errors.add(at, "BASE_TYPE_ARRAY", "Must be an array.");
      return undefined;
    }
    if (value.length < min || value.length > max) {
      if (min > 0)
        this.errors.add(at, "BASE_TYPE_BAD_LENGTH", `Must be between ${min} and ${max} in length.`);
      else this.errors.add(at, "BASE_TYPE_MAX_LENGTH", `Must be ${max} or fewer in length.`);
      return undefined;
    }
    return value;
  }

  protected int(at: Path, value: unknown, min: number, max: number): void {
    if (value === undefined || value === null) return;
    if (typeof value !== "number" || !Number.isInteger(value)) {
      this.errors.add(at, "NUMBER_TYPE_COERCE", `Value "${String(value)}" is not int.`);
    } else if (value < min) {
      this.errors.add(at, "NUMBER_TYPE_MIN", `int value should be greater than or equal to ${min}.`);
    } else if (value > max) {
      this.errors.add(at, "NUMBER_TYPE_MAX", `int value should be less than or equal to ${max}.`);
    }
  }

  protected bool(at: Path, value: unknown): void {
    if (value !== undefined && value !== null && typeof value !== "boolean") {
      this.errors.add(at, "BASE_TYPE_BOOLEAN", "Must be either true or false.");
    }
  }
}
