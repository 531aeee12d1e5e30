// `npm run bench -- <name>`: runs bench/<name>.ts, which writes bench/results/<name>.json.
import { existsSync } from 'node:fs';
import { join } from 'node:path';

const name = process.argv[2];
const file = name && join(import.meta.dirname, `${name}.ts`);
if (!file || !existsSync(file)) {
  console.error('usage: npm run bench -- <name>   (for example: runtime)');
  process.exit(2);
}
await import(file);
