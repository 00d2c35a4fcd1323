// @ts-check
import js from "@eslint/js";
import tseslint from "typescript-eslint";
import { layersConfig } from "./eslint-rules/config.js";

export default tseslint.config(
  { ignores: ["dist/", "node_modules/", "mainline-data/", "bin/", "coverage/"] },
  js.configs.recommended,
  ...tseslint.configs.strictTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      "@typescript-eslint/restrict-template-expressions": ["error", { allowNumber: true }],
      "@typescript-eslint/switch-exhaustiveness-check": [
        "error",
        { considerDefaultExhaustiveForUnions: true },
      ],
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_" }],
    },
  },
  // One dependency direction through src/, and no import cycle (docs/ARCHITECTURE.md).
  layersConfig,
  {
    // Files a reader can hold in mind; a migration's table declarations may run long.
    files: ["src/**/*.ts"],
    ignores: ["src/db/migrations/**"],
    rules: {
      "max-lines": ["error", { max: 800 }],
      "max-lines-per-function": ["error", { max: 150 }],
    },
  },
  {
    // Plain JavaScript (this file, scripts): no type information, Node's globals.
    files: ["**/*.js", "**/*.mjs"],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: {
      ...tseslint.configs.disableTypeChecked.languageOptions,
      globals: { process: "readonly", console: "readonly", URL: "readonly" },
    },
  },
);
