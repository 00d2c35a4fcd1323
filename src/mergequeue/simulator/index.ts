export * from "./heap.js";
export * from "./options.js";
export * from "./random.js";
export {
  describeSettings,
  percentile,
  type Anomalies,
  type SimulationReport,
  type StopReason,
} from "./report.js";
export * from "./simulate.js";
export * from "./theory.js";
export * from "./workload.js";
