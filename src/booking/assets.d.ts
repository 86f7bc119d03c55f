// The booking page's script, style sheet and icon, imported `with { type: "text" }` by page.ts: each import yields its text.
declare module "*/page/book.css" {
  const text: string;
  export default text;
}
declare module "*/page/book.js" {
  const text: string;
  export default text;
}
declare module "*/page/icon.svg" {
  const text: string;
  export default text;
}
