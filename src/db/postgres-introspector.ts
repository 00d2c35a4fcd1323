/**
 * What Kysely learns of the database's tables on PostgreSQL (its migrator asks whether its
 * bookkeeping tables exist before it takes its lock), read from the current schema only.
 *
 * Kysely's own introspector reads every schema of the database and calls
 * `pg_get_serial_sequence` for each column it finds. That function looks the table and column up
 * again by name, outside the query's snapshot: when another schema's migration renames or drops a
 * table or a column meanwhile, the call fails (`column "payload" of relation … does not exist`,
 * `schema "…" does not exist`), and with it the migration of ours. Two deployments sharing a
 * database in two schemas, or another application's schema changes, could then stop Mainline from
 * starting; the tests, one schema per file two files at a time, met it. This introspector reads
 * the catalog of the current schema (Mainline's: the search_path's first) within one snapshot,
 * and tells an auto-incrementing column from its identity or `nextval` default instead.
 */
import {
  PostgresDialect,
  sql,
  type DatabaseIntrospector,
  type DatabaseMetadataOptions,
  type Kysely,
  type SchemaMetadata,
  type TableMetadata,
} from "kysely";

const KYSELY_TABLES = new Set(["kysely_migration", "kysely_migration_lock"]);

interface ColumnRow {
  table: string;
  kind: string;
  schema: string;
  column: string;
  notNull: boolean;
  hasDefault: boolean;
  type: string;
  typeSchema: string;
  autoIncrementing: boolean;
  comment: string | null;
}

export class CurrentSchemaIntrospector implements DatabaseIntrospector {
  constructor(private readonly db: Kysely<unknown>) {}

  async getSchemas(): Promise<SchemaMetadata[]> {
    const { rows } = await sql<{ name: string | null }>`select current_schema() as name`.execute(
      this.db,
    );
    return rows.flatMap((row) => (row.name === null ? [] : [{ name: row.name }]));
  }

  async getTables(
    options: DatabaseMetadataOptions = { withInternalKyselyTables: false },
  ): Promise<TableMetadata[]> {
    const { rows } = await sql<ColumnRow>`
      select c.relname as "table", c.relkind as "kind", ns.nspname as "schema",
        a.attname as "column", a.attnotnull as "notNull", a.atthasdef as "hasDefault",
        typ.typname as "type", tns.nspname as "typeSchema",
        (a.attidentity <> '' or coalesce(pg_catalog.pg_get_expr(d.adbin, d.adrelid) like 'nextval(%', false))
          as "autoIncrementing",
        pg_catalog.col_description(c.oid, a.attnum) as "comment"
      from pg_catalog.pg_class c
      join pg_catalog.pg_namespace ns on ns.oid = c.relnamespace
      join pg_catalog.pg_attribute a on a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped
      join pg_catalog.pg_type typ on typ.oid = a.atttypid
      join pg_catalog.pg_namespace tns on tns.oid = typ.typnamespace
      left join pg_catalog.pg_attrdef d on d.adrelid = c.oid and d.adnum = a.attnum
      where ns.nspname = current_schema() and c.relkind in ('r', 'v', 'p')
      order by c.relname, a.attnum`.execute(this.db);
    const tables = new Map<string, TableMetadata>();
    for (const row of rows) {
      if (!options.withInternalKyselyTables && KYSELY_TABLES.has(row.table)) continue;
      let table = tables.get(row.table);
      if (!table) {
        table = {
          name: row.table,
          isView: row.kind === "v",
          isForeign: false,
          schema: row.schema,
          columns: [],
        };
        tables.set(row.table, table);
      }
      table.columns.push({
        name: row.column,
        dataType: row.type,
        dataTypeSchema: row.typeSchema,
        isNullable: !row.notNull,
        hasDefaultValue: row.hasDefault,
        isAutoIncrementing: row.autoIncrementing,
        ...(row.comment === null ? {} : { comment: row.comment }),
      });
    }
    return [...tables.values()];
  }
}

/** Kysely's PostgreSQL dialect with the introspector above. */
export class CurrentSchemaPostgresDialect extends PostgresDialect {
  override createIntrospector(db: Kysely<unknown>): DatabaseIntrospector {
    return new CurrentSchemaIntrospector(db);
  }
}
