// ESLint for the page scripts (chunkbench_core/reporting/static/*.js, evaluation/review_page/*.js). They run inline in
// self-contained HTML files, as classic scripts in any current browser: dom.js defines the one
// global `chunkbench` (shared DOM helpers) that every page script uses.
import js from "@eslint/js";
import globals from "globals";

// the config sits beside the linter in .tools/; the files it lints are in the package, one level up
export default [
  { basePath: "..", ...js.configs.recommended },
  {
    basePath: "..",
    files: ["**/*.js"],
    languageOptions: {
      ecmaVersion: 2020,
      sourceType: "script",
      globals: { ...globals.browser },
    },
    rules: {
      "eqeqeq": "error",
      "no-implicit-globals": "error",
      "no-var": "off",
      "strict": ["error", "function"],
      "no-restricted-properties": ["error",
        { property: "innerHTML", message: "build elements with textContent (dom.js), never from markup" },
        { property: "outerHTML", message: "build elements with textContent (dom.js), never from markup" },
        { property: "insertAdjacentHTML", message: "build elements with textContent (dom.js), never from markup" }],
      "no-restricted-globals": ["error", "eval"],
      "no-implied-eval": "error",
      "no-new-func": "error",
    },
  },
  {
    basePath: "..",
    files: ["**/*.js"],
    ignores: ["**/dom.js"],
    languageOptions: { globals: { chunkbench: "readonly" } },
  },
];
