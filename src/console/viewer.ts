import type { Actor } from "../auth/actor";
import type { ConsoleUser } from "./users";

/** Who is looking at a console page: the signed-in user, acting as `actor` (type `user`). */
export interface Viewer {
  user: ConsoleUser;
  actor: Actor;
  /** The session's CSRF token: forms send it as `_csrf`, scripts as `X-CSRF-Token`. */
  csrf: string;
  /** The session token's hash, hex (names the session without being it). */
  sessionId: string;
}
