// The product's source as its images run it: each TypeScript module of src/ compiled to JavaScript once,
// at build, with its relative `.ts` imports pointing at the `.js` files. Run from `.ts`, Node loads its
// type stripper in every process: the operator's modules imported from `.ts` took 124-127 MiB resident,
// from the compiled `.js` 98 MiB (decision 41). Every other file (the member's Python bootstrap) is copied.
import { copyFileSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import ts from 'typescript';

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
