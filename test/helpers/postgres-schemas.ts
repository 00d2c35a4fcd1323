/**
 * A test's PostgreSQL database is a schema of the run's database. Making one runs the run's
 * migrated schema as a script (global-setup.ts); a schema a test is done with is emptied and
 * used again by the file's next test, as fresh as a new one at a fraction of the cost, unless
 * another process was given its address (it may still be at work there) or the test changed its
 * structure.
 */
import { randomBytes } from "node:crypto";
import pg from "pg";

export interface SchemaTemplate {
  schema: string;
  script: string;
}

/** This file's schemas that tests are done with, emptied. */
const spare: string[] = [];
/** Each schema's structure as it was made (internal names differ from schema to schema). */
const madeAs = new Map<string, string>();

/** A schema holding the migrated structure and no rows but the migrations' own. */
export async function takeSchema(url: string, template: SchemaTemplate | null): Promise<string> {
  const reused = spare.pop();
  if (reused !== undefined) return reused;
  const schema = `s_${randomBytes(6).toString("hex")}`;
  await withAdmin(url, async (admin) => {
    if (template) {
      await admin.query(template.script.replaceAll(template.schema, schema));
      madeAs.set(schema, await fingerprint(admin, schema));
    } else {
      // Migrated when it is opened.
      await admin.query(`create schema ${schema}`);
    }
  });
  return schema;
}

/**
 * Gives back a schema whose connections are all closed: emptied (its sequences restarted) for
 * the next test when its structure is still the template's; otherwise left as it is.
 */
export async function giveBackSchema(url: string, schema: string): Promise<void> {
  const made = madeAs.get(schema);
  if (made === undefined) return;
  await withAdmin(url, async (admin) => {
    if ((await fingerprint(admin, schema)) !== made) return;
    // Foreign keys and triggers are off while it is emptied (their order does not matter then).
    await admin.query("set session_replication_role = replica");
    await admin.query(`
      do $$
      declare r record;
      begin
        for r in
          select c.relname, c.relkind from pg_class c
          join pg_namespace n on n.oid = c.relnamespace
          where n.nspname = '${schema}' and c.relkind in ('r', 'S')
            and c.relname not like 'kysely_migration%'
        loop
          if r.relkind = 'S' then
            execute format('alter sequence %I.%I restart', '${schema}', r.relname);
          else
            execute format('delete from %I.%I', '${schema}', r.relname);
          end if;
        end loop;
      end $$`);
    spare.push(schema);
  }).catch(() => undefined);
}

async function withAdmin(url: string, work: (admin: pg.Client) => Promise<void>): Promise<void> {
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  try {
    await work(admin);
  } finally {
    await admin.end();
  }
}

/** The schema's structure (relations, columns, constraints, triggers, rights) and migrations. */
async function fingerprint(admin: pg.Client, schema: string): Promise<string> {
  const { rows } = await admin.query<{ structure: string | null; migrations: string | null }>(
    `select
       (select md5(string_agg(x, ',' order by x)) from (
          select c.relname || ':' || c.relkind::text || ':' || coalesce(c.relacl::text, '') || ':' ||
            coalesce((select string_agg(a.attname || ' ' || format_type(a.atttypid, a.atttypmod)
                || ' ' || a.attnotnull::text || ' ' || a.attisdropped::text, ';' order by a.attnum)
              from pg_attribute a where a.attrelid = c.oid and a.attnum > 0), '') || ':' ||
            coalesce((select string_agg(k.conname || ' ' || k.contype::text, ';' order by k.conname)
              from pg_constraint k where k.conrelid = c.oid), '') || ':' ||
            coalesce((select string_agg(t.tgname || ' ' || t.tgenabled::text, ';' order by t.tgname)
              from pg_trigger t where t.tgrelid = c.oid), '') as x
          from pg_class c join pg_namespace n on n.oid = c.relnamespace
          where n.nspname = $1) f) as structure,
       (select string_agg(name, ',' order by name) from ${schema}.kysely_migration) as migrations`,
    [schema],
  );
  return `${rows[0]?.structure ?? ""}|${rows[0]?.migrations ?? ""}`;
}
