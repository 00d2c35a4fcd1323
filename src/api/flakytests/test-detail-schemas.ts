import { Type, type Static, type TSchema } from "typebox";
import { CLASSIFICATIONS, NAMED_SCOPES, SETTINGS_LIMITS } from "../../testhealth/settings-wire.js";
import { CaseInsensitiveEnum, PATTERN_MESSAGES, RepoRefSchema } from "../schemas.js";
import { DateTime, OrgRepoFields, PageQuerySchema, PageSchema } from "./schemas.js";
import { FailingTestSchema } from "./test-schemas.js";

/** Requests and responses of a test's details, runs, override, ticket, and the settings. */

const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

export const TestIdField = (description: string) =>
  Type.String({ format: "uuid", maxLength: 36, description });

export const OVERRIDES = ["ALWAYS_QUARANTINE", "NEVER_QUARANTINE", "UNSPECIFIED"] as const;

// ---- get-test-details ------------------------------------------------------------------------

export const GetTestDetailsBody = Type.Object({
  ...OrgRepoFields,
  test_id: TestIdField("The test's id (as in the lists)."),
});

export const QuarantineSchema = Type.Object(
  {
    setting: Nullable(
      Type.String({
        enum: ["ALWAYS_QUARANTINE", "AUTO_QUARANTINE"],
        description:
          "Why the test is quarantined now (`AUTO_QUARANTINE`: flaky with auto-quarantine on); null when it is not.",
      }),
    ),
    override: Type.String({ enum: [...OVERRIDES], description: "The per-test override." }),
    override_actor: Nullable(Type.String({ description: "Who set the override last." })),
    override_reason: Nullable(Type.String()),
    override_at: Nullable(DateTime("When the override was set last.")),
  },
  { description: "The test's quarantine state and override, with who, why and when." },
);

export const HistoryEntrySchema = Type.Object({
  status: Type.String({
    enum: ["healthy", "flaky", "broken"],
    description: "The test's status after the entry.",
  }),
  reason: Type.String({
    description:
      "`status`: the monitor and its evidence; `override`/`ticket`: what was changed, and why.",
  }),
  at: DateTime("When it happened."),
  kind: Type.String({
    enum: ["status", "override", "ticket"],
    description:
      "`status`: the classifier changed the status; `override`: a quarantine override was set; `ticket`: a ticket was linked or unlinked.",
  }),
  actor: Nullable(Type.String({ description: "Who made the change; null for the classifier." })),
});

export const MonitorStateSchema = Type.Object({
  id: Type.String({ description: "`pass-on-retry` or the id of a configured monitor." }),
  classification: Nullable(
    Type.String({
      enum: [...CLASSIFICATIONS],
      description: "What the monitor flags; null for a monitor no longer configured.",
    }),
  ),
  active: Type.Boolean(),
  reason: Type.String({ description: "Why it is active, or was when it last was." }),
  changed_at: DateTime("When `active` last changed."),
});

export const TestDetailSchema = Type.Object(
  { ...FailingTestSchema.properties, quarantine: QuarantineSchema },
  { description: "The test as list-failing-tests shows it, plus its quarantine object." },
);

export const TestDetailsResponse = Type.Object({
  test: TestDetailSchema,
  status_history: Type.Array(HistoryEntrySchema, {
    maxItems: 100,
    description: "Newest first, at most 100 entries.",
  }),
  monitors: Type.Array(MonitorStateSchema, {
    description: "Each monitor's state for this test, in the order of the settings.",
  }),
});

// ---- list-test-runs --------------------------------------------------------------------------

export const ListTestRunsBody = Type.Object({
  ...OrgRepoFields,
  test_id: TestIdField("The test's id."),
  page_query: PageQuerySchema,
});

export const RunSchema = Type.Object({
  at: DateTime("The run's time."),
  status: Type.String({ enum: ["passed", "failed", "skipped"] }),
  attempt: Type.String({
    enum: ["final", "flaky", "rerun"],
    description:
      "`final`: the testcase's result; `flaky`/`rerun`: a `flakyFailure`/`rerunFailure` attempt.",
  }),
  commit_sha: Type.String(),
  branch: Type.String(),
  pr_number: Nullable(Type.Integer()),
  duration_ms: Nullable(Type.Integer()),
  upload_id: Type.String({ format: "uuid" }),
  failure_summary: Nullable(Type.String({ description: "First line of the failure." })),
  failure_text: Nullable(Type.String({ description: "The failure's text (up to 8,000 chars)." })),
  infrastructure_failure: Type.Boolean({
    description: "The run's upload was excluded by infrastructure-failure protection.",
  }),
});

export const ListTestRunsResponse = Type.Object({ runs: Type.Array(RunSchema), page: PageSchema });

// ---- link-ticket-to-test-case -----------------------------------------------------------------

export const LinkTicketBody = Type.Object({
  repo: RepoRefSchema,
  org_url_slug: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 63,
      description:
        "The organization's slug (optional here, as in Trunk's API); when given it must be the token's.",
    }),
  ),
  test_case_id: TestIdField("The test's id."),
  external_ticket_id: Nullable(
    Type.String({
      minLength: 1,
      maxLength: 2000,
      pattern: "\\S",
      description:
        "A ticket URL (http or https), or an id such as `KAN-123` appended to the repository's `ticket_base_url`; null unlinks.",
    }),
  ),
});
PATTERN_MESSAGES.set("\\S", "must not be blank");

export const LinkTicketResponse = Type.Object({
  test_case_id: Type.String({ format: "uuid" }),
  ticket: Nullable(
    Type.Object({ html_url: Type.String() }, { description: "null after an unlink." }),
  ),
});

// ---- set-quarantine-override ------------------------------------------------------------------

export const SetOverrideBody = Type.Object({
  ...OrgRepoFields,
  test_id: TestIdField("The test's id."),
  override: CaseInsensitiveEnum(
    OVERRIDES,
    "`ALWAYS_QUARANTINE` or `NEVER_QUARANTINE` whatever the status; `UNSPECIFIED` returns the test to the repository's rule.",
  ),
  reason: Type.Optional(
    Nullable(Type.String({ maxLength: 500, description: "Why; kept with the override." })),
  ),
  actor: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 200,
      description: "Who sets it (e.g. an e-mail address); default `token:<token id>`.",
    }),
  ),
});

export const SetOverrideResponse = Type.Object({
  test_id: Type.String({ format: "uuid" }),
  quarantined: Type.Boolean({ description: "Whether the test is quarantined now." }),
  ...QuarantineSchema.properties,
});

// ---- get-test-settings / update-test-settings -------------------------------------------------

const MONITOR_ID_PATTERN = SETTINGS_LIMITS.monitorId.source;
PATTERN_MESSAGES.set(
  MONITOR_ID_PATTERN,
  "must be 1-64 letters, digits, dots, dashes or underscores, starting with a letter or digit",
);

const Glob = Type.String({ minLength: 1, maxLength: SETTINGS_LIMITS.globLength });
const Globs = (description: string, minItems = 0) =>
  Type.Array(Glob, { minItems, maxItems: SETTINGS_LIMITS.globs, description });

const Whole = (bounds: { min: number; max: number }, description: string) =>
  Type.Integer({ minimum: bounds.min, maximum: bounds.max, description });

const ScopeInput = Type.Union(
  [
    CaseInsensitiveEnum(
      NAMED_SCOPES,
      "The repository's stable branches, its merge-queue branches, or any branch.",
    ),
    Type.Object({ globs: Globs("Branch globs (`*` any text, `?` one character).", 1) }),
  ],
  { description: 'Which branches the monitor watches: a named set or `{"globs": [...]}`.' },
);

const ClassificationInput = CaseInsensitiveEnum(CLASSIFICATIONS, "What the monitor flags.");
const MonitorId = Type.String({
  pattern: MONITOR_ID_PATTERN,
  description: "Unique across both monitor lists; `pass-on-retry` is reserved.",
});

const FailureRateMonitorInput = Type.Object({
  id: MonitorId,
  enabled: Type.Boolean(),
  classification: ClassificationInput,
  scope: ScopeInput,
  window_hours: Whole(SETTINGS_LIMITS.windowHours, "The rolling window, in hours."),
  activation: Type.Number({
    exclusiveMinimum: 0,
    maximum: 1,
    description: "Activates at or above this failure rate (a fraction).",
  }),
  resolution: Type.Number({
    minimum: 0,
    maximum: 1,
    description: "Resolves below this rate; at most `activation`.",
  }),
  min_runs: Whole(SETTINGS_LIMITS.count, "Runs needed in the window before it can activate."),
});

const FailureCountMonitorInput = Type.Object({
  id: MonitorId,
  enabled: Type.Boolean(),
  classification: ClassificationInput,
  scope: ScopeInput,
  failures: Whole(SETTINGS_LIMITS.count, "Activates at this many failures within the window."),
  window_hours: Whole(SETTINGS_LIMITS.windowHours, "The window, in hours."),
  resolution_hours: Whole(
    SETTINGS_LIMITS.windowHours,
    "Resolves after this many hours without a failure; at least `window_hours`.",
  ),
});

export const UpdateTestSettingsBody = Type.Object({
  ...OrgRepoFields,
  stable_branches: Type.Optional(Globs("Stable branches (globs); default `main`, `master`.")),
  merge_queue_branches: Type.Optional(Globs("Merge-queue branches (globs).")),
  pass_on_retry: Type.Optional(
    Type.Object(
      {
        enabled: Type.Optional(Type.Boolean()),
        recovery_days: Type.Optional(
          Whole(SETTINGS_LIMITS.recoveryDays, "Resolves after this many days without a detection."),
        ),
      },
      { description: "Flaky when a commit has both a failed and a passed run; merged by field." },
    ),
  ),
  failure_rate_monitors: Type.Optional(
    Type.Array(FailureRateMonitorInput, {
      maxItems: SETTINGS_LIMITS.monitors,
      description: "Replaces the whole list.",
    }),
  ),
  failure_count_monitors: Type.Optional(
    Type.Array(FailureCountMonitorInput, {
      maxItems: SETTINGS_LIMITS.monitors,
      description: "Replaces the whole list.",
    }),
  ),
  quarantining_enabled: Type.Optional(Type.Boolean()),
  auto_quarantine: Type.Optional(Type.Boolean({ description: "Quarantine flaky tests." })),
  ticket_base_url: Type.Optional(
    Nullable(
      Type.String({
        maxLength: SETTINGS_LIMITS.ticketBaseUrlLength,
        pattern: "^[hH][tT][tT][pP][sS]?://",
        description:
          "Prefix of ticket ids that are not URLs, e.g. `https://linear.app/acme/issue/`.",
      }),
    ),
  ),
  pull_request_comments: Type.Optional(
    Type.Boolean({
      description:
        "Comment the failing tests on GitHub pull requests, each marked known flaky, quarantined, broken or new.",
    }),
  ),
  ticket_connection_id: Type.Optional(
    Nullable(
      Type.String({
        pattern: SETTINGS_LIMITS.connectionId.source,
        description:
          "The ticket connection (`tc_…`, see `/v1/tickets/listConnections`) tickets of this repository go to; null: none.",
      }),
    ),
  ),
  auto_ticket: Type.Optional(
    Type.Object(
      {
        flaky: Type.Optional(
          Type.Boolean({ description: "Create a ticket for each test flaky long enough." }),
        ),
        broken: Type.Optional(
          Type.Boolean({ description: "Create a ticket for each test broken long enough." }),
        ),
        after_hours: Type.Optional(
          Whole(
            SETTINGS_LIMITS.ticketAfterHours,
            "How long a test has been flaky (or broken) first, in hours (default 24).",
          ),
        ),
        require_owner: Type.Optional(
          Type.Boolean({
            description: "Only tests with an owner in CODEOWNERS (default true).",
          }),
        ),
      },
      {
        description:
          "The automatic rule (off by default), merged field by field; needs `ticket_connection_id`. Never for a test with a ticket linked.",
      },
    ),
  ),
});
PATTERN_MESSAGES.set("^[hH][tT][tT][pP][sS]?://", "must be an http(s) URL");
PATTERN_MESSAGES.set(SETTINGS_LIMITS.connectionId.source, "must be a ticket connection's id");

const ScopeOutput = Type.Union([
  Type.String({ enum: [...NAMED_SCOPES] }),
  Type.Object({ globs: Type.Array(Type.String()) }),
]);

export const TestSettingsResponse = Type.Object({
  stable_branches: Type.Array(Type.String()),
  merge_queue_branches: Type.Array(Type.String()),
  pass_on_retry: Type.Object({ enabled: Type.Boolean(), recovery_days: Type.Integer() }),
  failure_rate_monitors: Type.Array(
    Type.Object({
      id: Type.String(),
      enabled: Type.Boolean(),
      classification: Type.String({ enum: [...CLASSIFICATIONS] }),
      scope: ScopeOutput,
      window_hours: Type.Integer(),
      activation: Type.Number(),
      resolution: Type.Number(),
      min_runs: Type.Integer(),
    }),
  ),
  failure_count_monitors: Type.Array(
    Type.Object({
      id: Type.String(),
      enabled: Type.Boolean(),
      classification: Type.String({ enum: [...CLASSIFICATIONS] }),
      scope: ScopeOutput,
      failures: Type.Integer(),
      window_hours: Type.Integer(),
      resolution_hours: Type.Integer(),
    }),
  ),
  quarantining_enabled: Type.Boolean(),
  auto_quarantine: Type.Boolean(),
  ticket_base_url: Nullable(Type.String()),
  pull_request_comments: Type.Boolean(),
  ticket_connection_id: Nullable(Type.String()),
  auto_ticket: Type.Object({
    flaky: Type.Boolean(),
    broken: Type.Boolean(),
    after_hours: Type.Integer(),
    require_owner: Type.Boolean(),
  }),
  updated_at: Nullable(DateTime("When the settings were last written; null: the defaults.")),
});

export type PresentedQuarantine = Static<typeof QuarantineSchema>;
export type PresentedHistoryEntry = Static<typeof HistoryEntrySchema>;
export type PresentedMonitorState = Static<typeof MonitorStateSchema>;
export type PresentedRun = Static<typeof RunSchema>;
