/**
 * A faithful substitute for Trunk's Terraform provider (terraform-provider-trunk v1.0.4) as far
 * as the wire goes (background §trunk-api-8): the requests it sends for create, read, update,
 * delete and import, and what it does with the answers. Go cannot be built here, so this
 * replays its behaviour: pointer fields with `omitempty`, `x-source: terraform`, retries on 5xx
 * only, every attribute read back into state unconditionally.
 */

/** The resource's attributes as a user writes them in HCL (unset = undefined). */
export interface QueueResourceConfig {
  repo: { host: string; owner: string; name: string };
  targetBranch: string;
  mode?: string;
  concurrency?: number;
  state?: string;
  testingTimeoutMinutes?: number;
  pendingFailureDepth?: number;
  canOptimisticallyMerge?: boolean;
  batch?: boolean;
  batchingMaxWaitTimeMinutes?: number;
  batchingMinSize?: number;
  mergeMethod?: string;
  commentsEnabled?: boolean;
  commandsEnabled?: boolean;
  createPrsForTestingBranches?: boolean;
  statusCheckEnabled?: boolean;
  directMergeMode?: string;
  optimizationMode?: string;
  bisectionConcurrency?: number;
  extensionEnabled?: boolean;
  enqueueingLabel?: string;
  labelCommandsEnabled?: boolean;
  stateLabelsEnabled?: boolean;
  requiredStatuses?: string[] | null;
}

/** Attributes the provider reads from getQueue/updateQueue answers, with their Go types. */
export const STATE_ATTRIBUTES = {
  mode: "string",
  concurrency: "number",
  state: "string",
  testingTimeoutMinutes: "number",
  pendingFailureDepth: "number",
  canOptimisticallyMerge: "boolean",
  batch: "boolean",
  batchingMaxWaitTimeMinutes: "number",
  batchingMinSize: "number",
  createPrsForTestingBranches: "boolean",
  mergeMethod: "string",
  commentsEnabled: "boolean",
  commandsEnabled: "boolean",
  statusCheckEnabled: "boolean",
  directMergeMode: "string",
  optimizationMode: "string",
  bisectionConcurrency: "number",
  extensionEnabled: "boolean",
  enqueueingLabel: "string",
  labelCommandsEnabled: "boolean",
  stateLabelsEnabled: "boolean",
  requiredStatuses: "list-or-null",
} as const;

export type QueueState = Record<keyof typeof STATE_ATTRIBUTES, unknown>;

export class ApiError extends Error {
  constructor(
    readonly statusCode: number,
    readonly body: string,
  ) {
    super(`API error ${statusCode}: ${body}`);
  }
}

export interface ProviderDiagnostics {
  requests: { endpoint: string; body: Record<string, unknown>; headers: Record<string, string> }[];
}

export class TerraformProviderSubstitute {
  readonly diagnostics: ProviderDiagnostics = { requests: [] };

  constructor(
    private readonly baseUrl: string, // TRUNK_BASE_URL, e.g. http://127.0.0.1:8080/v1
    private readonly apiKey: string,
  ) {}

  /** `client.go`: POST base + "/" + endpoint, retry 3 times on 5xx and network errors only. */
  private async post(endpoint: string, body: Record<string, unknown>): Promise<string> {
    const headers = {
      "Content-Type": "application/json",
      "x-api-token": this.apiKey,
      "x-source": "terraform",
    };
    this.diagnostics.requests.push({ endpoint, body, headers });
    const url = `${this.baseUrl.replace(/\/+$/, "")}/${endpoint}`;
    let lastError: unknown;
    for (let attempt = 0; attempt <= 3; attempt++) {
      try {
        const response = await fetch(url, { method: "POST", headers, body: JSON.stringify(body) });
        const text = await response.text();
        if (response.status >= 200 && response.status < 300) return text;
        if (response.status < 500) throw new ApiError(response.status, text);
        lastError = new ApiError(response.status, text);
      } catch (error) {
        if (error instanceof ApiError && error.statusCode < 500) throw error;
        lastError = error;
      }
    }
    throw lastError;
  }

  /** Go's encoding/json into the provider's response struct, then into state. */
  private parseState(text: string): QueueState {
    const parsed = JSON.parse(text) as Record<string, unknown>;
    const state = {} as QueueState;
    for (const [key, type] of Object.entries(STATE_ATTRIBUTES)) {
      const value = parsed[key];
      const ok =
        type === "list-or-null"
          ? value === null || (Array.isArray(value) && value.every((v) => typeof v === "string"))
          : typeof value === type;
      // A missing or mistyped field would decode to Go's zero value and show up as a diff.
      if (!ok)
        throw new Error(`response field ${key} is ${JSON.stringify(value)}, expected ${type}`);
      state[key as keyof QueueState] = value;
    }
    return state;
  }

  /** The updateQueue request of an apply: only configured attributes, and the statuses rule. */
  private updateRequest(config: QueueResourceConfig): Record<string, unknown> {
    const body: Record<string, unknown> = { repo: config.repo, targetBranch: config.targetBranch };
    for (const key of Object.keys(STATE_ATTRIBUTES) as (keyof typeof STATE_ATTRIBUTES)[]) {
      if (key === "requiredStatuses") continue;
      const value = config[key];
      if (value !== undefined) body[key] = value;
    }
    if (config.requiredStatuses === undefined || config.requiredStatuses === null) {
      body.deleteRequiredStatuses = true;
    } else {
      body.requiredStatuses = config.requiredStatuses;
    }
    return body;
  }

  /** Create: createQueue (mode/concurrency omitted when unset or zero), then updateQueue. */
  async create(config: QueueResourceConfig): Promise<QueueState> {
    const createBody: Record<string, unknown> = {
      repo: config.repo,
      targetBranch: config.targetBranch,
    };
    if (config.mode) createBody.mode = config.mode;
    if (config.concurrency) createBody.concurrency = config.concurrency;
    try {
      await this.post("createQueue", createBody);
    } catch (error) {
      if (error instanceof ApiError && error.statusCode === 409) {
        throw new Error("merge queue already exists; import it with terraform import", {
          cause: error,
        });
      }
      throw error;
    }
    return this.parseState(await this.post("updateQueue", this.updateRequest(config)));
  }

  /** Read: getQueue; 404 means the resource is gone (removed from state). */
  async read(repo: QueueResourceConfig["repo"], targetBranch: string): Promise<QueueState | null> {
    try {
      return this.parseState(await this.post("getQueue", { repo, targetBranch }));
    } catch (error) {
      if (error instanceof ApiError && error.statusCode === 404) return null;
      throw error;
    }
  }

  async update(config: QueueResourceConfig): Promise<QueueState> {
    return this.parseState(await this.post("updateQueue", this.updateRequest(config)));
  }

  async delete(repo: QueueResourceConfig["repo"], targetBranch: string): Promise<void> {
    try {
      await this.post("deleteQueue", { repo, targetBranch });
    } catch (error) {
      if (error instanceof ApiError && error.statusCode === 400) {
        throw new Error("merge queue is not empty; drain it before deleting", { cause: error });
      }
      throw error;
    }
  }

  /** Import id `host/owner/name/target_branch`; the branch may itself contain slashes. */
  async import(id: string): Promise<{ config: QueueResourceConfig; state: QueueState | null }> {
    const [host, owner, name, ...branch] = id.split("/");
    if (!host || !owner || !name || branch.length === 0) throw new Error(`bad import id ${id}`);
    const repo = { host, owner, name };
    const targetBranch = branch.join("/");
    return { config: { repo, targetBranch }, state: await this.read(repo, targetBranch) };
  }
}

/**
 * Terraform's consistency check after apply: every configured attribute must come back exactly
 * as configured ("Provider produced inconsistent result after apply").
 */
export function inconsistentAttributes(config: QueueResourceConfig, state: QueueState): string[] {
  const problems: string[] = [];
  for (const key of Object.keys(STATE_ATTRIBUTES) as (keyof typeof STATE_ATTRIBUTES)[]) {
    const configured = key === "requiredStatuses" ? (config.requiredStatuses ?? null) : config[key];
    if (configured === undefined) continue;
    if (JSON.stringify(configured) !== JSON.stringify(state[key])) {
      problems.push(
        `${key}: configured ${JSON.stringify(configured)}, got ${JSON.stringify(state[key])}`,
      );
    }
  }
  return problems;
}
