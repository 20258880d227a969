import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { publishedSchemas } from '../src/runtime/json-schemas';

const folder = join(__dirname, '..', 'schemas');
mkdirSync(folder, { recursive: true });
for (const [name, schema] of Object.entries(publishedSchemas())) {
  writeFileSync(join(folder, name), `${JSON.stringify(schema, null, 2)}\n`);
  console.log(`wrote schemas/${name}`);
}
