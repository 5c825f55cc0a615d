// Rego unit-test runner (`guardian policy test`).
export {
  runPolicyTests,
  PolicyTestSetupError,
  type PolicyTestOptions,
  type PolicyTestReport,
  type PolicyTestResult,
  type TestCaseResult,
  type TestErrorValue,
  type TestStatus,
} from './runner.ts';
export { formatPolicyTestReport, goDuration, policyTestReportJson } from './report.ts';
export { TestEvaluationError, type TestEvaluationErrorCode } from './evaluator.ts';
export {
  CoverageProbes,
  coverageThresholdError,
  formatCoverageReport,
  type CoverageReport,
  type FileCoverage,
  type LineRange,
} from './coverage.ts';
