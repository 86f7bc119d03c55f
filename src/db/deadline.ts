// Requests answer within about a second (operations.md §7): a database that is away or stuck
// becomes a quick 503 instead of a hang.
import { AppError } from "../errors";

export const DEADLINE_MS = 1000;

export function withDeadline<T>(work: Promise<T>, ms = DEADLINE_MS): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new AppError("unavailable", "the database did not answer in time")), ms);
  });
  return Promise.race([work, expired]).finally(() => clearTimeout(timer));
}
