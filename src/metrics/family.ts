// A declared path's route family (./counters.ts): what its requests are counted and logged under.
import type { Family } from "./counters";

const EXACT: Record<string, Family> = {
  "/hooks/lead_intake.php": "intake",
  "/hooks/api_v1.php": "api_v1",
  "/hooks/kpi_ingest.php": "kpi",
  "/hooks/calls.php": "calls",
  "/hooks/cti_queue.php": "cti_queue",
  "/hooks/dni.php": "dni",
  "/dni.js": "dni_script",
  "/book/api.php": "booking",
  "/hooks/sms_status.php": "callbacks",
  "/hooks/sms_inbound.php": "callbacks",
  "/healthz": "health",
  "/readyz": "health",
  "/openapi.json": "docs",
  "/docs": "docs",
  "/metrics": "metrics",
};

/** By the declared path (`/book/{slug}`), never the requested one. */
export function familyOf(path: string): Family {
  const exact = EXACT[path];
  if (exact) return exact;
  if (path.startsWith("/docs")) return "docs";
  if (path.startsWith("/demo")) return "demo";
  if (path.startsWith("/unsubscribe/")) return "unsubscribe";
  if (path === "/console" || path.startsWith("/console/")) return "console";
  if (path === "/book" || path.startsWith("/book/")) return "booking_page";
  if (path.startsWith("/conversions/")) return "conversions";
  return "unknown";
}
