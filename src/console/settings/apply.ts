// Every settings form of the console writes through the provisioning service (src/provision/
// service.ts applyProvisioning): the form becomes a provisioning-file fragment for the one object
// it edits, checked by the file's own validation, merged with what is stored by the same rules
// (a field left out keeps its value), written and audited with previous and new values (secrets as
// "changed") under the console user as the actor. One validation and one set of rules for the CLI
// and the browser. The caller has already confined the object to the viewer's organization in SQL.
import type { Actor } from "../../auth/actor";
import type { Deps } from "../../http/deps";
import { TABLES, type ProvisioningFile } from "../../provision/model";
import type { Planned } from "../../provision/plan";
import { applyProvisioning, EXISTS, type ProvisionSummary } from "../../provision/service";
import { fileProblems, ProvisioningError } from "../../provision/validate";

/** `exists`: a createOnly run found its object stored already (pick another id). */
export type Applied = { ok: true; summary: ProvisionSummary } | { ok: false; problems: string[]; exists: boolean };

/** A section's path prefix (`orgs[0].`) means nothing on a form that edits one object. */
const onForm = (problem: string) => problem.replace(/^[a-z_]+\[0\](\.|: )?/, "");

/**
 * A createOnly run whose object is stored already: EXISTS, or for an organization's user the
 * confinement's answer when it is another organization's (plan.ts: "webhook 7 does not exist").
 */
const stored = (problem: string) => problem.endsWith(EXISTS) || /^[a-z_]+\[0\]: [a-z]+ \S+ does not exist$/.test(problem);

/** `expect`: the plan's problems, checked under the run's lock (applyProvisioning's `expect`). */
export async function applySettings(deps: Deps, actor: Actor, fragment: ProvisioningFile, createOnly = false, expect?: (planned: Planned[]) => string[]): Promise<Applied> {
  const problems = fileProblems(fragment);
  if (problems.length > 0) return { ok: false, problems: problems.map(onForm), exists: false };
  try {
    const summary = await applyProvisioning(deps.sql, fragment, { actor, now: new Date(deps.clock.now()), secretKey: deps.config.secretKey, createOnly, expect });
    return { ok: true, summary };
  } catch (err) {
    if (err instanceof ProvisioningError) return { ok: false, problems: err.problems.map(onForm), exists: createOnly && err.problems.some(stored) };
    throw err;
  }
}

/**
 * A new object of a section keyed by an integer id (webhooks, automations, calendars, orgs): the next
 * free id, applied create-only; taken meanwhile by another run (the provisioning lock decides),
 * the next is tried. Answers the id used.
 */
export async function createNext(
  deps: Deps,
  actor: Actor,
  section: "webhooks" | "automations" | "calendars" | "orgs",
  object: Record<string, unknown>,
): Promise<{ ok: true; id: number } | { ok: false; problems: string[] }> {
  for (let tries = 0; tries < 5; tries++) {
    const [{ next }] = await deps.sql<{ next: number }[]>`select (coalesce(max(id), 0) + 1 + ${tries})::float8 as next from ${deps.sql(TABLES[section].table)}`;
    const r = await applySettings(deps, actor, { [section]: [{ id: next, ...object }] } as unknown as ProvisioningFile, true);
    if (r.ok) return { ok: true, id: next };
    if (!r.exists) return { ok: false, problems: r.problems };
  }
  return { ok: false, problems: ["Another one was being added at the same moment: try again."] };
}

/** A form's text field: trimmed; empty is "not given". */
export const given = (v: string | undefined): string | undefined => {
  const s = (v ?? "").trim();
  return s === "" ? undefined : s;
};
