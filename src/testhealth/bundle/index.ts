export { BundleError } from "./errors.js";
export { DEFAULT_BUNDLE_LIMITS, type BundleLimits } from "./limits.js";
export { detectCompression, type Compression } from "./decompress.js";
export {
  readBundle,
  type BundleEntry,
  type BundleSource,
  type ReadBundleOptions,
} from "./reader.js";
export {
  parseBundleMeta,
  repoRefFromUrl,
  type BundleFile,
  type BundleFileSet,
  type BundleMeta,
  type BundleRepoRef,
} from "./meta.js";
export { prNumberFrom, jobNameFrom, jobUrlFrom, branchFromEnv, cleanBranch } from "./ci-env.js";
export {
  collect,
  trunkMetaJson,
  writeArchive,
  writeBundle,
  writeBundleBuffer,
  type ArchiveEntry,
  type ArchiveOptions,
  type BundleInputFile,
  type BundleMetaInput,
  type FileContent,
  type WriteBundleOptions,
} from "./writer.js";
export {
  decodeTestReport,
  encodeTestReport,
  encodeTestResult,
  testCasesOfReport,
  TestReportError,
  TEST_CASE_RUN_STATUS,
  type TestCaseRunMessage,
  type TestReportMessage,
  type TestResultMessage,
} from "./test-report.js";
