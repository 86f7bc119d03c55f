// The reference page's style sheet, imported `with { type: "text" }` by page.ts: the import yields its text.
declare module "*/docs.css" {
  const text: string;
  export default text;
}
