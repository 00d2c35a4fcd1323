import { join } from "node:path";
import { ProjectRepo } from "./git.js";
import { Instance, type FakeGitLabOptions } from "./instance.js";
import {
  DEFAULT_SETTINGS,
  ZERO_SHA,
  type AccessLevel,
  type Project,
  type ProjectSettings,
} from "./model.js";

/** Projects, members, protected branches, and git as a developer (`commit`). */

export interface ProjectInit {
  /** `group/sub/app` (missing groups are created). */
  path: string;
  /** The first commit on the default branch (default a README; `{}`: an empty repository). */
  files?: Record<string, string>;
  defaultBranch?: string;
  visibility?: Project["visibility"];
  settings?: Partial<ProjectSettings>;
}

export class ProjectsSetup extends Instance {
  protected constructor(options: FakeGitLabOptions) {
    super(options);
  }

  // ---- projects --------------------------------------------------------------------------------

  async createProject(init: ProjectInit): Promise<{ id: number; pathWithNamespace: string }> {
    const world = this.world;
    const slash = init.path.lastIndexOf("/");
    if (slash < 0) throw new Error("a project path is group/…/name");
    if (
      [...world.projects.values()].some(
        (p) => p.pathWithNamespace.toLowerCase() === init.path.toLowerCase(),
      )
    ) {
      throw new Error(`project ${init.path} exists`);
    }
    const namespace = this.group(init.path.slice(0, slash), true);
    const defaultBranch = init.defaultBranch ?? "main";
    const project: Project = {
      id: world.nextId("project"),
      name: init.path.slice(slash + 1),
      path: init.path.slice(slash + 1),
      pathWithNamespace: init.path,
      namespace,
      defaultBranch,
      visibility: init.visibility ?? "private",
      gitDir: join(world.reposDir, `${init.path}.git`),
      createdAt: Date.now(),
      settings: { ...DEFAULT_SETTINGS, ...init.settings },
      members: new Map(),
      protectedBranches: [
        {
          id: world.nextId("protected"),
          name: defaultBranch,
          pushAccessLevel: 40,
          mergeAccessLevel: 40,
          allowForcePush: false,
        },
      ],
      labels: new Map(),
      mergeRequests: new Map(),
      nextMrIid: 1,
      pipelines: [],
      nextPipelineIid: 1,
      hooks: new Map(),
      variables: {},
      jobOutcomes: new Map(),
      lock: Promise.resolve(),
    };
    const repo = await ProjectRepo.create(project.gitDir, defaultBranch, world.tmpDir);
    world.projects.set(project.id, project);
    const files = init.files ?? { "README.md": `# ${project.name}\n` };
    if (Object.keys(files).length > 0) {
      const sig = { name: this.root.name, email: this.root.email };
      const sha = await repo.commitFiles(null, files, "Initial commit", sig);
      await repo.updateRef(`refs/heads/${defaultBranch}`, sha, ZERO_SHA);
    }
    return { id: project.id, pathWithNamespace: project.pathWithNamespace };
  }

  addMember(projectPath: string, username: string, level: AccessLevel): void {
    this.world.project(projectPath).members.set(this.world.user(username).id, level);
  }

  /** Protects a branch or wildcard (`release/*`); levels 0 (no one), 30, 40. */
  protectBranch(
    projectPath: string,
    name: string,
    options: {
      pushAccessLevel?: 0 | 30 | 40;
      mergeAccessLevel?: 0 | 30 | 40;
      allowForcePush?: boolean;
    } = {},
  ): void {
    const project = this.world.project(projectPath);
    project.protectedBranches = project.protectedBranches.filter((p) => p.name !== name);
    project.protectedBranches.push({
      id: this.world.nextId("protected"),
      name,
      pushAccessLevel: options.pushAccessLevel ?? 40,
      mergeAccessLevel: options.mergeAccessLevel ?? 40,
      allowForcePush: options.allowForcePush ?? false,
    });
  }

  unprotectBranch(projectPath: string, name: string): void {
    const project = this.world.project(projectPath);
    project.protectedBranches = project.protectedBranches.filter((p) => p.name !== name);
  }

  updateSettings(projectPath: string, settings: Partial<ProjectSettings>): void {
    const project = this.world.project(projectPath);
    project.settings = { ...project.settings, ...settings };
  }

  /** The clone URL, with a token as the Basic password when given. */
  gitUrl(projectPath: string, token?: string): string {
    const project = this.world.project(projectPath);
    const url = new URL(this.world.httpUrl(project));
    if (token !== undefined) {
      url.username = "oauth2";
      url.password = token;
    }
    return url.toString();
  }

  gitDir(projectPath: string): string {
    return this.world.project(projectPath).gitDir;
  }

  branchHead(projectPath: string, branch: string): Promise<string | null> {
    return this.world.repo(this.world.project(projectPath)).branchHead(branch);
  }

  /**
   * Commits `files` (null deletes) on `branch` as `author` (default root) and pushes it, with a
   * push's side effects (Push Hook, merge requests refreshed, pipelines), done when this returns.
   * A new branch starts at `from` (a branch or sha; default the default branch).
   */
  async commit(
    projectPath: string,
    branch: string,
    files: Record<string, string | null>,
    options: { message?: string; author?: string; from?: string } = {},
  ): Promise<string> {
    const project = this.world.project(projectPath);
    const repo = this.world.repo(project);
    const user = options.author === undefined ? this.root : this.world.user(options.author);
    const before = await repo.branchHead(branch);
    const parent = before ?? (await repo.resolve(options.from ?? project.defaultBranch));
    if (before === null && options.from !== undefined && parent === null)
      throw new Error(`no ${options.from}`);
    const sig = { name: user.name, email: user.email };
    const sha = await repo.commitFiles(
      parent,
      files,
      options.message ?? `Update ${Object.keys(files).join(", ")}`,
      sig,
    );
    if (!(await repo.updateRef(`refs/heads/${branch}`, sha, before ?? ZERO_SHA)))
      throw new Error(`${branch} moved`);
    await this.world.withLock(project, () =>
      this.pushes.process(project, user, [
        { ref: `refs/heads/${branch}`, before: before ?? ZERO_SHA, after: sha },
      ]),
    );
    return sha;
  }
}
