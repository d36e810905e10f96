import { compare, COLUMNS, renderReport } from "./bench/conformance.ts";
const cols = [COLUMNS[0]!, COLUMNS.find((c) => c.name === "proxy --http")!];
const only = process.argv.slice(2);
const c = await compare({ columns: cols, only, progress: (l) => console.error(l) });
console.log(renderReport(c));
