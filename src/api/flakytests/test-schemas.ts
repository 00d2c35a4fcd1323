import { Type } from "typebox";
import { DateTime } from "./schemas.js";

/** The response shapes of tests in the Flaky Tests API. */

export const StatusSchema = Type.Object({
  value: Type.String({ enum: ["healthy", "flaky", "broken"] }),
  reason: Type.String({ description: "Names the monitor and its evidence." }),
  timestamp: DateTime("When the status last changed."),
});

const TestFields = {
  id: Type.String({ format: "uuid", description: "Trunk-compatible test id (UUIDv5)." }),
  repository: Type.Object({ html_url: Type.String() }),
  html_url: Type.String({ description: "The service's own page of the test." }),
  name: Type.String(),
  variant: Type.String({ description: '`""` when none.' }),
  status: StatusSchema,
  codeowners: Type.Array(Type.String()),
  pull_requests_impacted_last_7d: Type.Integer(),
  quarantined: Type.Boolean(),
  file_path: Type.String(),
  parent: Type.String(),
  classname: Type.String(),
  ticket: Type.Optional(
    Type.Object(
      {
        html_url: Type.String(),
        key: Type.Optional(
          Type.String({
            description:
              "Mainline extension, get-test-details only: the ticket's key (`ENG-42`) when it was created through a ticket connection.",
          }),
        ),
        state: Type.Optional(
          Type.Union(
            [
              Type.Object({
                name: Type.String({ description: "The provider's name of it (`In Progress`)." }),
                open: Type.Boolean(),
                checked_at: DateTime("When it was read back from the provider."),
              }),
              Type.Null(),
            ],
            {
              description:
                "Mainline extension, get-test-details only: the ticket's state as last read back (null until read), for a ticket created through a ticket connection.",
            },
          ),
        ),
      },
      { description: "Present only when linked." },
    ),
  ),
};

export const UnhealthyTestSchema = Type.Object(TestFields);

export const FailureGroupSchema = Type.Object({
  summary: Type.String(),
  occurrence_count: Type.Integer(),
  last_occurrence: DateTime("The group's latest failure."),
});

export const FailingTestSchema = Type.Object({
  ...TestFields,
  most_common_failures: Type.Array(FailureGroupSchema, { maxItems: 5 }),
  failure_rate_last_7d: Type.Number({ minimum: 0, maximum: 1 }),
  failure_rate_last_24h: Type.Number({ minimum: 0, maximum: 1 }),
});

export const QuarantinedTestSchema = Type.Object({
  name: Type.String(),
  parent: Type.Union([Type.String(), Type.Null()]),
  file: Type.Union([Type.String(), Type.Null()]),
  classname: Type.Union([Type.String(), Type.Null()]),
  codeowners: Type.Array(Type.String()),
  quarantined_at: DateTime("When the override was set, or when the test became flaky."),
  status_last_updated_at: DateTime("When the status last changed."),
  test_case_id: Type.String({ format: "uuid" }),
  variant: Type.String(),
  quarantine_setting: Type.String({ enum: ["ALWAYS_QUARANTINE", "AUTO_QUARANTINE"] }),
  status: Type.String({ enum: ["HEALTHY", "FLAKY", "BROKEN"] }),
});
