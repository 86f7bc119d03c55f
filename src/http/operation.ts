// An operation of /hooks/api_v1.php, as a feature exports it for the assembly (src/app/api-v1.ts)
// to mount: the method and `r` it answers, its key requirements, and what it does.
import type { Grant, KeyedSpec, ReadBody } from "./keyed";

export interface ApiV1Request {
  grant: Grant;
  /** The numeric id of an `r` of the form `name/{id}`; 0 otherwise. */
  id: number;
  query: Record<string, string | undefined>;
  body: ReadBody;
}

export interface ApiV1Operation {
  method: "GET" | "POST";
  /** `r` exactly, or a prefix followed by `{id}` (1 to 15 digits), e.g. `leads/{id}`. */
  r: string;
  spec: KeyedSpec;
  run(req: ApiV1Request): Promise<unknown> | unknown;
}

/** POST bodies of api_v1 operations are at most 64 KiB. */
export const API_V1_BODY_LIMIT = 64 * 1024;
