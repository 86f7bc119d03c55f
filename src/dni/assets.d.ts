// The browser script, imported `with { type: "text" }` by script.ts: the import yields its source.
declare module "*/dni.js" {
  const source: string;
  export default source;
}
