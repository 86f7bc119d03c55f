// The console's files (src/console/assets/), imported `with { type: "text" }` by assets.ts: each
// import yields its text. One block per file, as in ASSETS (TypeScript allows one `*` per pattern).
declare module "*/assets/console.css" {
  const text: string;
  export default text;
}
declare module "*/assets/console.js" {
  const text: string;
  export default text;
}
declare module "*/assets/icon.svg" {
  const text: string;
  export default text;
}
declare module "*/assets/operations.css" {
  const text: string;
  export default text;
}
declare module "*/assets/reports.css" {
  const text: string;
  export default text;
}
declare module "*/assets/copy-tag.js" {
  const text: string;
  export default text;
}
declare module "*/assets/lead.css" {
  const text: string;
  export default text;
}
declare module "*/assets/timeline.js" {
  const text: string;
  export default text;
}
declare module "*/assets/inbox.css" {
  const text: string;
  export default text;
}
declare module "*/assets/composer.js" {
  const text: string;
  export default text;
}
declare module "*/assets/inbox.js" {
  const text: string;
  export default text;
}
declare module "htmx.org/dist/htmx.min.js" {
  const text: string;
  export default text;
}
declare module "htmx-ext-sse/dist/sse.min.js" {
  const text: string;
  export default text;
}
declare module "*/assets/older.js" {
  const text: string;
  export default text;
}
declare module "*/assets/notify.js" {
  const text: string;
  export default text;
}
declare module "*/assets/today.js" {
  const text: string;
  export default text;
}
