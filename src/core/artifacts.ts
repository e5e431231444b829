/** A file a tool or the answer produced, uploaded into the thread once. */
export interface Artifact {
  title: string;
  filename: string;
  mimeType: string;
  bytes: Uint8Array;
}
