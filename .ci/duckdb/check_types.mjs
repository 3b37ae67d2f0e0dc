// Load a result folder in DuckDB, the CSV files with the types of the folder's
// datapackage.json and the Parquet files that `runner export parquet` wrote, and check that
// every column gets the type the schema file says, in both, with the same values.
//
// Usage: node check_types.mjs RESULT_DIR [PARQUET_DIR]   (PARQUET_DIR: RESULT_DIR/parquet)
//
// Types: integer BIGINT, number DOUBLE, boolean BOOLEAN, string VARCHAR, datetime TIMESTAMPTZ
// (DuckDB keeps microseconds; the Parquet file's own column type, INT64
// TIMESTAMP(NANOS, UTC), is checked from its metadata). A column marked required must have
// no null in the CSV and be REQUIRED in the Parquet file; the others are OPTIONAL.
import fs from 'node:fs';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';

const duckType = {
  integer: 'BIGINT',
  number: 'DOUBLE',
  boolean: 'BOOLEAN',
  string: 'VARCHAR',
  datetime: 'TIMESTAMP WITH TIME ZONE',
};

// The Parquet column type each schema type must have: physical type and logical type.
const parquetType = {
  integer: ['INT64', /^IntType\(bitWidth=.*isSigned=1\)$/],
  number: ['DOUBLE', null],
  boolean: ['BOOLEAN', null],
  string: ['BYTE_ARRAY', /^StringType\(\)$/],
  datetime: ['INT64', /^TimestampType\(isAdjustedToUTC=1, .*NANOS=NanoSeconds\(\)\)\)$/],
};

function fail(msg) {
  console.error('check_types (duckdb): ' + msg);
  process.exit(1);
}

const [dir, pqArg] = process.argv.slice(2);
if (!dir) fail('usage: node check_types.mjs RESULT_DIR [PARQUET_DIR]');
const pqDir = pqArg || path.join(dir, 'parquet');
const schemaPath = path.join(dir, 'datapackage.json');
if (!fs.existsSync(schemaPath)) fail(`${schemaPath}: no schema file in the folder`);
const pkg = JSON.parse(fs.readFileSync(schemaPath, 'utf8'));

const sqlString = (s) => "'" + s.replaceAll("'", "''") + "'";
const ident = (s) => '"' + s.replaceAll('"', '""') + '"';

const instance = await DuckDBInstance.create(':memory:');
const conn = await instance.connect();
const query = async (sql) => (await conn.runAndReadAll(sql)).getRowObjectsJS();
const version = (await query('SELECT version() AS v'))[0].v;

const problems = [];
let checked = 0;
for (const res of pkg.resources) {
  const fields = res.schema.fields;
  const csvPath = path.join(dir, res.path);
  const pqPath = path.join(pqDir, res.path.replace(/\.csv$/, '.parquet'));
  if (!fs.existsSync(csvPath)) {
    problems.push(`${res.path}: listed in datapackage.json but not in the folder`);
    continue;
  }
  if (!fs.existsSync(pqPath)) {
    problems.push(`${pqPath}: no Parquet file for ${res.path}`);
    continue;
  }
  const columns = '{' + fields.map((f) => `${sqlString(f.name)}: ${sqlString(duckType[f.type] ?? 'unknown type ' + f.type)}`).join(', ') + '}';
  const csvSQL = `read_csv(${sqlString(csvPath)}, header = true, auto_detect = false, delim = ',', quote = '"', escape = '"', nullstr = '', columns = ${columns})`;
  const pqSQL = `read_parquet(${sqlString(pqPath)})`;
  const csvTable = ident('csv_' + res.name);
  const pqTable = ident('pq_' + res.name);
  try {
    await query(`CREATE TABLE ${csvTable} AS SELECT * FROM ${csvSQL}`);
  } catch (e) {
    problems.push(`${res.path}: DuckDB cannot load it with the schema's types: ${e.message}`);
    continue;
  }
  await query(`CREATE TABLE ${pqTable} AS SELECT * FROM ${pqSQL}`);

  const csvCols = await query(`DESCRIBE ${csvTable}`);
  const pqCols = await query(`DESCRIBE ${pqTable}`);
  const pqMeta = (await query(`SELECT name, type, repetition_type, logical_type FROM parquet_schema(${sqlString(pqPath)}) WHERE type IS NOT NULL`));
  const names = fields.map((f) => f.name).join(',');
  for (const [what, cols] of [['csv', csvCols], ['parquet', pqCols]]) {
    const got = cols.map((c) => c.column_name).join(',');
    if (got !== names) problems.push(`${res.path} (${what}): columns ${got}, schema ${names}`);
  }
  if (pqMeta.map((c) => c.name).join(',') !== names) {
    problems.push(`${pqPath}: Parquet columns ${pqMeta.map((c) => c.name).join(',')}, schema ${names}`);
    continue;
  }
  const autoDetected = await query(`DESCRIBE SELECT * FROM read_csv(${sqlString(csvPath)})`);
  const inferredOther = [];
  for (const [i, f] of fields.entries()) {
    const want = duckType[f.type];
    const required = Boolean(f.constraints && f.constraints.required);
    if (csvCols[i]?.column_type !== want) problems.push(`${res.path}: ${f.name}: csv loads as ${csvCols[i]?.column_type}, schema says ${f.type} (${want})`);
    if (pqCols[i]?.column_type !== want) problems.push(`${res.path}: ${f.name}: parquet loads as ${pqCols[i]?.column_type}, schema says ${f.type} (${want})`);
    const [phys, logical] = parquetType[f.type];
    const m = pqMeta[i];
    if (m.type !== phys || (logical && !logical.test(m.logical_type ?? '')) || (!logical && m.logical_type)) {
      problems.push(`${pqPath}: ${f.name}: Parquet type ${m.type} ${m.logical_type}, schema says ${f.type}`);
    }
    if (m.repetition_type !== (required ? 'REQUIRED' : 'OPTIONAL')) {
      problems.push(`${pqPath}: ${f.name}: ${m.repetition_type}, schema says ${required ? 'required' : 'nullable'}`);
    }
    if (required) {
      const nulls = (await query(`SELECT count(*) AS n FROM ${csvTable} WHERE ${ident(f.name)} IS NULL`))[0].n;
      if (nulls > 0) problems.push(`${res.path}: ${f.name}: ${nulls} empty cells in a required column`);
    }
    if (autoDetected[i]?.column_type !== want) inferredOther.push(`${f.name} ${autoDetected[i]?.column_type}`);
    checked++;
  }
  // The same rows in both, compared as typed values.
  const n = Number((await query(`SELECT count(*) AS n FROM ${csvTable}`))[0].n);
  const pn = Number((await query(`SELECT count(*) AS n FROM ${pqTable}`))[0].n);
  const diff = Number((await query(`SELECT count(*) AS n FROM (SELECT * FROM ${csvTable} EXCEPT ALL SELECT * FROM ${pqTable})`))[0].n) +
    Number((await query(`SELECT count(*) AS n FROM (SELECT * FROM ${pqTable} EXCEPT ALL SELECT * FROM ${csvTable})`))[0].n);
  if (n !== pn || diff !== 0) problems.push(`${res.path}: ${n} csv rows, ${pn} parquet rows, ${diff} rows differ`);
  const empty = [];
  for (const f of fields) {
    const c = Number((await query(`SELECT count(${ident(f.name)}) AS n FROM ${csvTable}`))[0].n);
    if (c === 0 && n > 0) empty.push(f.name);
  }
  console.log(`${res.path}: ${n} rows, ${fields.length} columns` +
    (empty.length ? `; empty in every row: ${empty.join(', ')}` : '') +
    (inferredOther.length ? `; without the schema DuckDB would infer ${inferredOther.join(', ')}` : ''));
}
if (problems.length) fail(`DuckDB ${version} loads columns with the wrong types:\n  ` + problems.join('\n  '));
console.log(`check_types (duckdb): ${checked} columns of ${pkg.resources.length} files load with their types from CSV and Parquet (DuckDB ${version})`);
