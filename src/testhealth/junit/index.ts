export { parseJunit, parseJunitText, type JunitParseOptions, type JunitSource } from "./parser.js";
export { mergeRepeatedTestcases } from "./attempts.js";
export * from "./types.js";
