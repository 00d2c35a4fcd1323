import type { ServerSecretRecords } from "./ports.js";
import type { Clock } from "../lib/clock.js";
import { pageInfo, readPageToken, type PageInfo, type PageQueryScope } from "../lib/page-tokens.js";

const SECRET_NAME = "page-tokens";

/** Page tokens signed with the server's shared key (created once, used by every process). */
export class Pager {
  private key: Buffer | undefined;

  constructor(
    private readonly secrets: ServerSecretRecords,
    private readonly clock: Clock,
  ) {}

  private async signingKey(): Promise<Buffer> {
    return (this.key ??= await this.secrets.getOrCreate(SECRET_NAME, this.clock.now()));
  }

  /** The row offset the token points at (0 for none or ""); `invalid_page_token` otherwise. */
  async offset(scope: PageQueryScope, token: string | undefined): Promise<number> {
    return readPageToken(await this.signingKey(), scope, token);
  }

  async page(
    scope: PageQueryScope,
    offset: number,
    pageSize: number,
    totalRows: number,
  ): Promise<PageInfo> {
    return pageInfo(await this.signingKey(), scope, offset, pageSize, totalRows);
  }
}
