import { randomBytes } from "node:crypto";
import type { Kysely } from "kysely";
import type { Database } from "../schema.js";
import type { ServerSecretRecords } from "../../testhealth/ports.js";

export const SECRET_BYTES = 32;

/**
 * Named random keys, created on first use and then the same for every process and restart: a
 * page token signed by one server must be accepted by another, and after a restart.
 */
export class ServerSecretStore implements ServerSecretRecords {
  constructor(private readonly db: Kysely<Database>) {}

  async getOrCreate(name: string, now: number): Promise<Buffer> {
    const existing = await this.find(name);
    if (existing) return existing;
    await this.db
      .insertInto("serverSecrets")
      .values({ name, value: randomBytes(SECRET_BYTES).toString("base64"), createdAt: now })
      .onConflict((oc) => oc.column("name").doNothing())
      .execute();
    // Another process may have won the race: whichever row exists is the secret.
    const stored = await this.find(name);
    if (!stored) throw new Error(`server secret ${name} vanished while being created`);
    return stored;
  }

  private async find(name: string): Promise<Buffer | undefined> {
    const row = await this.db
      .selectFrom("serverSecrets")
      .select("value")
      .where("name", "=", name)
      .executeTakeFirst();
    return row && Buffer.from(row.value, "base64");
  }
}
