import { Type } from "typebox";
import { RepoRefSchema } from "../schemas.js";

/** Fields every flaky-tests request carries (snake_case, as in api.md). */
export const OrgRepoFields = {
  repo: RepoRefSchema,
  org_url_slug: Type.String({
    minLength: 1,
    maxLength: 63,
    description: "The organization's slug; must be the token's organization (403 otherwise).",
  }),
};

export const PageQuerySchema = Type.Object(
  {
    page_size: Type.Integer({ minimum: 1, maximum: 100, description: "Rows per page, 1..100." }),
    page_token: Type.Optional(
      Type.String({
        maxLength: 2048,
        description: 'A token from a previous `page`; absent or `""` for the first page.',
      }),
    ),
  },
  { description: "Pagination request." },
);

export const PageSchema = Type.Object(
  {
    total_rows: Type.Integer(),
    total_pages: Type.Integer(),
    next_page_token: Type.String({ description: '`""` on the last page.' }),
    prev_page_token: Type.String({ description: '`""` on the first page.' }),
    last_page_token: Type.String({ description: '`""` only when there are no rows.' }),
    page_index: Type.Integer({ description: "0-based." }),
  },
  { description: "Pagination response: all six fields, always." },
);

export const DateTime = (description: string) => Type.String({ format: "date-time", description });
