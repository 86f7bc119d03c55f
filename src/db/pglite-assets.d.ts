// PGlite's runtime files, imported `with { type: "file" }` by embedded.ts: the import yields a path
// (inside the compiled executable, a /$bunfs/ path).
declare module "*/pglite.data" {
  const path: string;
  export default path;
}
declare module "*.wasm" {
  const path: string;
  export default path;
}
// The migrated database image (src/db/image.ts), imported the same way.
declare module "*.tar.gz" {
  const path: string;
  export default path;
}
