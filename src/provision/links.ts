// A calendar's booking links (calendar_links: one row per slug, unique across the installation).
// A file adds slugs and never removes one, since a link handed out must keep working; a slug given
// under another calendar of the same organization moves there. A slug held by a calendar of
// another organization never moves by a tenant's run (a manager's console form or fragment):
// otherwise one tenant could take over another's booking link, and with it the bookings its
// customers make. The refusal does not say which organization holds it. The platform (the
// operator's file, an admin) upserts links by slug across organizations, as operations.md §3 has it.
import type { Tx } from "../db/client";
import type { Planned } from "./plan";
import { upsertRows } from "./upsert";

/** The refusal's words (the console answers it as a conflict). */
export const SLUG_TAKEN = "is taken by another organization's calendar";

const slugsOf = (links: unknown) => ((links ?? []) as { slug: string }[]).map((l) => l.slug);

/** Problems of the calendars the plan gives new slugs that another organization's calendar holds. */
export async function takenLinkProblems(tx: Tx, calendars: Planned[]): Promise<string[]> {
  const added = calendars.flatMap((c) => {
    const had = new Set(slugsOf(c.stored?.links));
    return slugsOf(c.row.links)
      .filter((s) => !had.has(s))
      .map((slug) => ({ c, slug }));
  });
  if (added.length === 0) return [];
  const held = new Map(
    (await tx<{ slug: string; org_id: number | null }[]>`
      select l.slug, c.org_id::float8 as org_id from calendar_links l join calendars c on c.id = l.calendar_id
      where l.slug in ${tx(added.map((a) => a.slug))}`).map((r) => [r.slug, r.org_id]),
  );
  return added
    .filter((a) => held.has(a.slug) && held.get(a.slug) !== ((a.c.row.org_id as number | null | undefined) ?? null))
    .map((a) => `${a.c.path}.links: slug ${JSON.stringify(a.slug)} ${SLUG_TAKEN}`);
}

/** A slug names one calendar; naming it under another calendar (of the same organization) moves it. */
export async function writeLinks(tx: Tx, calendars: Planned[], now: Date): Promise<void> {
  const rows = calendars.flatMap((c) => (c.row.links as { slug: string }[]).map((l) => ({ slug: l.slug, calendar_id: c.key as number })));
  await upsertRows(tx, "calendar_links", ["slug"], rows, { column: "updated_at", at: now });
}
