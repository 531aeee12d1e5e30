// The product's source as its images run it: each TypeScript module of src/ compiled to JavaScript once,
// at build, with its relative `.ts` imports pointing at the `.js` files. Run from `.ts`, Node loads its
// type stripper in every process: the operator's modules imported from `.ts` took 124-127 MiB resident,
// from the compiled `.js` 98 MiB (decision 41). Every other file (the member's Python bootstrap) is copied.
// The operator image's program is then bundled: `kvpool/main.js` becomes that program with everything it
// imports in one file, which loads in 78-80 MiB instead of 99 (decision 48).
import { copyFileSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { buildSync, version as bundlerVersion } from 'esbuild';
import ts from 'typescript';

/** What the output is made with, besides the source: part of its cache key. */
export const compilerVersions = `typescript ${ts.version}, esbuild ${bundlerVersion}`;

/** The program bundled in place of its compiled entry, relative to src/. */
export const bundledProgram = 'kvpool/main';

/**
 * Loaded only for a kubeconfig the operator's own reader does not handle (src/kube/kubeconfig.ts), and
 * 80 MiB when it is: left to node_modules, never in the bundle.
 */
const unbundled = ['@kubernetes/client-node'];

const compilerOptions: ts.CompilerOptions = {
  module: ts.ModuleKind.ESNext,
  target: ts.ScriptTarget.ES2024,
  verbatimModuleSyntax: true,
  rewriteRelativeImportExtensions: true,
};

/** One module's JavaScript; throws naming the file on a syntax error. */
export function compileModule(fileName: string, text: string): string {
  const out = ts.transpileModule(text, { fileName, compilerOptions, reportDiagnostics: true });
  const errors = (out.diagnostics ?? []).filter((d) => d.category === ts.DiagnosticCategory.Error);
  if (errors.length)
    throw new Error(
      `${fileName}: ${errors.map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n')).join('; ')}`,
    );
  return out.outputText;
}

/** Compiles the tree at `from` into `to` (which must not exist yet). */
export function compileTree(from: string, to: string): void {
  for (const entry of readdirSync(from, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const source = join(entry.parentPath, entry.name);
    const rel = source.slice(from.length + 1);
    if (rel.split('/').some((part) => part === '__pycache__')) continue;
    const dest = join(to, rel.endsWith('.ts') ? `${rel.slice(0, -3)}.js` : rel);
    mkdirSync(dirname(dest), { recursive: true });
    if (rel.endsWith('.ts')) writeFileSync(dest, compileModule(source, readFileSync(source, 'utf8')));
    else copyFileSync(source, dest);
  }
}

/**
 * Bundles `entry` (TypeScript) with the modules it imports into one ES module at `outfile`. Whitespace
 * and syntax are minified, names kept, so a stack trace still names the functions.
 */
export function bundleProgram(entry: string, outfile: string): void {
  const result = buildSync({
    entryPoints: [entry],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node24',
    minifyWhitespace: true,
    minifySyntax: true,
    external: unbundled,
    // The CommonJS dependencies (pino, prom-client) call require(); an ES module has none of its own.
    banner: {
      js: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);",
    },
    logLevel: 'silent',
  });
  if (result.errors.length)
    throw new Error(`bundling ${entry}: ${result.errors.map((e) => e.text).join('; ')}`);
}

/** What the images run: the tree at `from` (src/) compiled into `to`, and the operator's program bundled. */
export function compileProduct(from: string, to: string): void {
  compileTree(from, to);
  bundleProgram(join(from, `${bundledProgram}.ts`), join(to, `${bundledProgram}.js`));
}
