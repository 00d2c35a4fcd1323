import type { Trigger } from "./pipelines.js";
import type { Project } from "./model.js";
import type { World } from "./world.js";

/**
 * GitLab CI/CD's predefined variables for a pipeline: the server's, the project's, the commit's,
 * the pipeline's, and for merge request pipelines the merge request's (`CI_MERGE_REQUEST_*`, no
 * `CI_COMMIT_BRANCH`); a branch pipeline with open merge requests gets `CI_OPEN_MERGE_REQUESTS`.
 * Also `$VAR` expansion in `.gitlab-ci.yml` variables.
 */

/** CI/CD's predefined variables for a pipeline (job-level ones are the runner's). */
export function predefinedVariables(
  world: World,
  project: Project,
  t: Trigger,
  id: number,
  iid: number,
  message: string,
): Record<string, string> {
  const web = world.projectWeb(project);
  const branch = t.mr === null ? t.ref : t.mr.sourceBranch;
  const url = new URL(world.url);
  const vars: Record<string, string> = {
    CI: "true",
    GITLAB_CI: "true",
    CI_SERVER: "yes",
    CI_SERVER_NAME: "GitLab",
    CI_SERVER_URL: world.url,
    CI_SERVER_HOST: url.hostname,
    CI_SERVER_PORT: url.port,
    CI_SERVER_PROTOCOL: url.protocol.replace(":", ""),
    CI_SERVER_VERSION: world.profile.version,
    CI_API_V4_URL: `${world.url}/api/v4`,
    CI_PROJECT_ID: String(project.id),
    CI_PROJECT_NAME: project.path,
    CI_PROJECT_PATH: project.pathWithNamespace,
    CI_PROJECT_NAMESPACE: project.namespace.fullPath,
    CI_PROJECT_ROOT_NAMESPACE: project.namespace.fullPath.split("/")[0] ?? "",
    CI_PROJECT_URL: web,
    CI_PROJECT_VISIBILITY: project.visibility,
    CI_DEFAULT_BRANCH: project.defaultBranch,
    CI_COMMIT_SHA: t.sha,
    CI_COMMIT_SHORT_SHA: t.sha.slice(0, 8),
    CI_COMMIT_BEFORE_SHA: t.beforeSha,
    CI_COMMIT_REF_NAME: branch,
    CI_COMMIT_REF_SLUG: slug(branch),
    CI_COMMIT_REF_PROTECTED: String(world.protectionOf(project, branch) !== null),
    CI_COMMIT_MESSAGE: message,
    CI_COMMIT_TITLE: message.split("\n")[0] ?? "",
    CI_PIPELINE_ID: String(id),
    CI_PIPELINE_IID: String(iid),
    CI_PIPELINE_SOURCE: t.source,
    CI_PIPELINE_URL: `${web}/-/pipelines/${id}`,
    CI_PIPELINE_CREATED_AT: new Date().toISOString().replace(/\.\d+Z$/, "Z"),
  };
  if (t.mr === null) {
    vars.CI_COMMIT_BRANCH = t.ref;
    const open = [...project.mergeRequests.values()].filter(
      (m) => m.state === "opened" && m.sourceBranch === t.ref,
    );
    if (open.length > 0) {
      vars.CI_OPEN_MERGE_REQUESTS = open
        .map((m) => `${project.pathWithNamespace}!${m.iid}`)
        .join(",");
    }
    return vars;
  }
  const mr = t.mr;
  return {
    ...vars,
    CI_MERGE_REQUEST_ID: String(mr.id),
    CI_MERGE_REQUEST_IID: String(mr.iid),
    CI_MERGE_REQUEST_PROJECT_ID: String(project.id),
    CI_MERGE_REQUEST_PROJECT_PATH: project.pathWithNamespace,
    CI_MERGE_REQUEST_PROJECT_URL: web,
    CI_MERGE_REQUEST_REF_PATH: `refs/merge-requests/${mr.iid}/head`,
    CI_MERGE_REQUEST_SOURCE_BRANCH_NAME: mr.sourceBranch,
    CI_MERGE_REQUEST_SOURCE_PROJECT_ID: String(project.id),
    CI_MERGE_REQUEST_SOURCE_PROJECT_PATH: project.pathWithNamespace,
    CI_MERGE_REQUEST_SOURCE_PROJECT_URL: web,
    CI_MERGE_REQUEST_TARGET_BRANCH_NAME: mr.targetBranch,
    CI_MERGE_REQUEST_TITLE: mr.title,
    CI_MERGE_REQUEST_LABELS: mr.labels.join(","),
    CI_MERGE_REQUEST_EVENT_TYPE: "detached",
    CI_MERGE_REQUEST_DIFF_BASE_SHA: mr.diffRefs?.base_sha ?? "",
  };
}

/** `CI_COMMIT_REF_SLUG`: lowercased, non-alphanumerics as `-`, at most 63 characters. */
function slug(ref: string): string {
  return ref
    .toLowerCase()
    .replace(/[^a-z0-9]/g, "-")
    .slice(0, 63)
    .replace(/^-+|-+$/g, "");
}

/** Expands `$VAR` and `${VAR}` in each value from `vars` (unknown names expand to nothing). */
export function expandAll(
  values: Record<string, string>,
  vars: Record<string, string>,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(values)) {
    out[key] = value.replace(
      /\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?/g,
      (_m, name: string) => vars[name] ?? "",
    );
  }
  return out;
}
